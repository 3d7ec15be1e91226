import CCSync

/// Shell completion scripts made from the command registry: commands, their options, the
/// values an option's kind knows (signals, `--prefer`), files, and etcd URLs from
/// `$ETCDCTL_ENDPOINTS`. Each script stands alone: the bash one is a `complete -F` function
/// that needs nothing from the bash-completion package.
enum CompletionScripts {
  /// The shells there is a script for.
  static let shells = ["bash", "zsh", "fish"]

  /// The script for `shell`, one of ``shells``.
  static func script(for shell: String, commands: [CommandSpec]) -> String {
    switch shell {
    case "zsh": return zsh(commands)
    case "fish": return fish(commands)
    default: return bash(commands)
    }
  }

  // MARK: bash

  static func bash(_ commands: [CommandSpec]) -> String {
    var text = """
      # bash completion for ccsync, made by 'ccsync completion bash'.
      # Stands alone: source it, or install it as /usr/share/bash-completion/completions/ccsync.

      # Words for an etcd URL: etcd:///, and etcd://HOST:PORT/ for each of $ETCDCTL_ENDPOINTS.
      _ccsync_etcd_urls() {
        local endpoint
        printf '%s\\n' 'etcd:///'
        local IFS=,
        for endpoint in $ETCDCTL_ENDPOINTS; do
          endpoint=${endpoint#http://}
          endpoint=${endpoint#https://}
          printf 'etcd://%s/\\n' "${endpoint%/}"
        done
      }

      _ccsync() {
        # The word being completed, taken from the line itself: bash splits 'etcd://h:2379'
        # at each ':' (COMP_WORDBREAKS), which a URL must not be.
        local line=${COMP_LINE:0:COMP_POINT}
        local cur=${line##*[[:space:]]}
        local prev=${COMP_WORDS[COMP_CWORD-1]}
        local -a words=()
        read -r -a words <<< "$line"
        [[ -z $cur ]] && words+=("")
        local count=${#words[@]}
        (( count > 1 )) && prev=${words[count-2]}
        COMPREPLY=()
        if (( count <= 2 )); then
          COMPREPLY=($(compgen -W "\(commands.map(\.name).joined(separator: " ")) --help --version -h -V" -- "$cur"))
          return 0
        fi
        local command=${words[1]} i
        for (( i = 2; i < count - 1; i++ )); do
          if [[ ${words[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
            return 0
          fi
        done
        local options='' values='' operand=document
        case $command in

      """
    for spec in commands {
      let options = spec.allOptions.flatMap { option in ["--" + option.long] + (option.short.map { ["-\($0)"] } ?? []) }
      text += "    \(spec.name))\n"
      text += "      options='\(options.joined(separator: " "))'\n"
      var valueCases: [String] = []
      for option in spec.options where option.takesValue {
        let names = (["--" + option.long] + (option.short.map { ["-\($0)"] } ?? [])).joined(separator: "|")
        switch option.kind {
        case .file:
          valueCases.append("        \(names)) COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;")
        case .choice, .signal:
          valueCases.append("        \(names)) COMPREPLY=($(compgen -W '\(option.knownValues!.joined(separator: " "))' -- \"$cur\")); return 0 ;;")
        default:
          valueCases.append("        \(names)) return 0 ;;")
        }
      }
      if !valueCases.isEmpty {
        text += "      case $prev in\n" + valueCases.joined(separator: "\n") + "\n      esac\n"
      }
      text += "      operand='\(bashOperandKind(spec))'\n"
      text += "      ;;\n"
    }
    text += """
          *) return 0 ;;
        esac
        if [[ $cur == -* ]]; then
          COMPREPLY=($(compgen -W "$options" -- "$cur"))
          return 0
        fi
        case $operand in
          document)
            if [[ $cur == e* ]]; then
              COMPREPLY=($(compgen -W "$(_ccsync_etcd_urls)" -- "$cur"))
            fi
            COMPREPLY+=($(compgen -f -- "$cur"))
            ;;
          file) COMPREPLY=($(compgen -f -- "$cur")) ;;
          commands) COMPREPLY=($(compgen -W "\(commands.map(\.name).joined(separator: " "))" -- "$cur")) ;;
          choice:*) COMPREPLY=($(compgen -W "${operand#choice:}" -- "$cur")) ;;
        esac
        # Bash puts back what it took as the word before the last ':'; offer the rest.
        if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
          local prefix=${cur%"${cur##*:}"} index
          for index in "${!COMPREPLY[@]}"; do COMPREPLY[index]=${COMPREPLY[index]#"$prefix"}; done
        fi
        return 0
      }
      complete -o filenames -F _ccsync ccsync

      """
    return text
  }

  /// What the first operand of `spec` is, for bash: `document`, `file`, `commands`,
  /// `choice:WORDS` or `none`.
  private static func bashOperandKind(_ spec: CommandSpec) -> String {
    if spec.name == "help" { return "commands" }
    if spec.name == "completion" { return "choice:" + shells.joined(separator: " ") }
    guard let first = spec.operands.first else { return "none" }
    switch first.kind {
    case .document, .etcdURL: return "document"
    case .file: return "document"
    case .choice(let words): return "choice:" + words.joined(separator: " ")
    case .text: return "none"
    }
  }

  // MARK: zsh

  static func zsh(_ commands: [CommandSpec]) -> String {
    var text = """
      #compdef ccsync
      # zsh completion for ccsync, made by 'ccsync completion zsh'. Install it as _ccsync in a
      # folder of $fpath (/usr/share/zsh/vendor-completions on Debian).

      _ccsync_documents() {
        local -a urls
        urls=('etcd:///')
        local endpoint
        for endpoint in ${(s:,:)ETCDCTL_ENDPOINTS}; do
          endpoint=${endpoint#http://}; endpoint=${endpoint#https://}
          urls+=("etcd://${endpoint%/}/")
        done
        compadd -S '' -a urls
        _files
      }

      _ccsync() {
        local -a commands
        commands=(

      """
    for spec in commands {
      text += "    '\(spec.name):\(zshEscape(spec.overview))'\n"
    }
    text += """
        )
        if (( CURRENT == 2 )); then
          _describe -t commands 'ccsync command' commands
          return
        fi
        local command=${words[2]}
        shift words
        (( CURRENT-- ))
        case $command in

      """
    for spec in commands {
      var arguments: [String] = []
      for option in spec.allOptions {
        let names = option.short.map { "(-\($0) --\(option.long))'{-\($0),--\(option.long)}'" } ?? "--\(option.long)"
        var argument = "'\(names)[\(zshEscape(option.help))]"
        if let valueName = option.valueName {
          switch option.kind {
          case .file: argument += ":\(valueName):_files"
          case .choice, .signal: argument += ":\(valueName):(\(option.knownValues!.joined(separator: " ")))"
          default: argument += ":\(valueName): "
          }
        }
        arguments.append(argument + "'")
      }
      for operand in spec.operands {
        let optional = operand.isOptional ? ":" : ""
        var action = " "
        switch operand.kind {
        case .document, .etcdURL, .file: action = "_ccsync_documents"
        case .choice(let words) where spec.name == "help": action = words.isEmpty ? "(\(commands.map(\.name).joined(separator: " ")))" : "(\(words.joined(separator: " ")))"
        case .choice(let words): action = "(\(words.joined(separator: " ")))"
        case .text: action = " "
        }
        arguments.append("'\(optional):\(operand.name):\(action)'")
      }
      if spec.takesCommand { arguments.append("'*::command:_normal'") }
      text += "    \(spec.name))\n      _arguments -s \\\n        " + arguments.joined(separator: " \\\n        ") + "\n      ;;\n"
    }
    text += """
        esac
      }

      _ccsync "$@"

      """
    return text
  }

  private static func zshEscape(_ text: String) -> String {
    var escaped = ""
    for character in text {
      switch character {
      case "'": escaped += "'\\''"
      case "[": escaped += "\\["
      case "]": escaped += "\\]"
      case ":": escaped += "\\:"
      default: escaped.append(character)
      }
    }
    return escaped
  }

  // MARK: fish

  static func fish(_ commands: [CommandSpec]) -> String {
    var lines = [
      "# fish completion for ccsync, made by 'ccsync completion fish'.",
      "# Install it as /usr/share/fish/vendor_completions.d/ccsync.fish.",
      "function __ccsync_etcd_urls",
      "    echo etcd:///",
      "    for endpoint in (string split , -- $ETCDCTL_ENDPOINTS)",
      "        set endpoint (string replace -r '^https?://' '' -- $endpoint)",
      "        test -n \"$endpoint\"; and echo etcd://(string trim -r -c / -- $endpoint)/",
      "    end",
      "end",
      "complete -c ccsync -f",
      "complete -c ccsync -n __fish_use_subcommand -s h -l help -d 'Show help information'",
      "complete -c ccsync -n __fish_use_subcommand -s V -l version -d 'Show the version'",
    ]
    let names = commands.map(\.name).joined(separator: " ")
    for spec in commands {
      lines.append("complete -c ccsync -n __fish_use_subcommand -a \(spec.name) -d \(fishQuote(spec.overview))")
      let condition = "'__fish_seen_subcommand_from \(spec.name)'"
      for option in spec.allOptions {
        var line = "complete -c ccsync -n \(condition)"
        if let short = option.short { line += " -s \(short)" }
        line += " -l \(option.long)"
        if option.takesValue {
          line += " -r"
          if let values = option.knownValues { line += " -f -a \(fishQuote(values.joined(separator: " ")))" }
          if case .file = option.kind { line += " -F" }
        }
        lines.append(line + " -d \(fishQuote(option.help))")
      }
      if spec.name == "help" {
        lines.append("complete -c ccsync -n \(condition) -a \(fishQuote(names))")
      } else if spec.name == "completion" {
        lines.append("complete -c ccsync -n \(condition) -a \(fishQuote(shells.joined(separator: " ")))")
      } else if let first = spec.operands.first {
        switch first.kind {
        case .document, .etcdURL, .file:
          lines.append("complete -c ccsync -n \(condition) -F -a '(__ccsync_etcd_urls)'")
        case .choice(let words):
          lines.append("complete -c ccsync -n \(condition) -a \(fishQuote(words.joined(separator: " ")))")
        case .text:
          break
        }
      }
    }
    return lines.joined(separator: "\n") + "\n"
  }

  private static func fishQuote(_ text: String) -> String {
    "'" + text.replacingAll("\\", with: "\\\\").replacingAll("'", with: "\\'") + "'"
  }
}

extension String {
  /// This text with every `target` replaced by `replacement` (no Foundation).
  func replacingAll(_ target: Character, with replacement: String) -> String {
    var result = ""
    for character in self {
      if character == target { result += replacement } else { result.append(character) }
    }
    return result
  }
}

/// `ccsync completion bash|zsh|fish`.
enum CompletionCommand: Command {
  static let spec = CommandSpec(
    name: "completion", overview: "Print the shell completion script for bash, zsh or fish.",
    operands: [OperandSpec("shell", kind: .choice(CompletionScripts.shells), help: "bash, zsh or fish.")],
    options: [],
    discussion: "bash: source <(ccsync completion bash), or save it as ~/.local/share/bash-completion/completions/ccsync. zsh: save it as _ccsync in a folder of $fpath. fish: save it as ~/.config/fish/completions/ccsync.fish. The Debian package installs all three.")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let shell = arguments.operands[0]
    guard CompletionScripts.shells.contains(shell) else {
      throw arguments.usageError("Unknown shell '\(shell)': expected bash, zsh or fish" + Suggestion.nearest(to: shell, among: CompletionScripts.shells))
    }
    StandardStreams.write(CompletionScripts.script(for: shell, commands: CommandRegistry.visibleSpecs))
    return ExitCode.success
  }
}
