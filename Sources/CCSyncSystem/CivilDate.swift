/// Dates of the proleptic Gregorian calendar counted in days from 1970-01-01, both ways
/// (Howard Hinnant's algorithms): for timestamps written and read without `gmtime_r`, whose
/// first call in a process reads `/etc/localtime`. `Sendable`: no state.
package enum CivilDate {
  /// Days since 1970-01-01 of a proleptic Gregorian date.
  package static func days(year: Int64, month: Int, day: Int) -> Int64 {
    let shiftedYear = month <= 2 ? year - 1 : year
    let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
    let yearOfEra = shiftedYear - era * 400
    let monthFromMarch = Int64(month > 2 ? month - 3 : month + 9)
    let dayOfYear = (153 * monthFromMarch + 2) / 5 + Int64(day) - 1
    let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
    return era * 146_097 + dayOfEra - 719_468
  }

  /// The proleptic Gregorian date of a day counted from 1970-01-01.
  package static func date(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
    let shifted = days + 719_468
    let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
    let dayOfEra = shifted - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthFromMarch = (5 * dayOfYear + 2) / 153
    let day = Int(dayOfYear - (153 * monthFromMarch + 2) / 5 + 1)
    let month = Int(monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9)
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    return (year, month, day)
  }
}
