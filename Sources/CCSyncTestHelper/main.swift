import CCSync

print("helper")
