# Imported by words.py, so a module_utils file that imports another is followed.
def upper(text):
    return text.upper()
