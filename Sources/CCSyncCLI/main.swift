import CCSync

print("ccsync: not yet")
