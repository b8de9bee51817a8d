"""The ground floor: the words every floor shares, each a leaf. The enums and flag words, the
original's fixed sizes and the core's errors, range checks where numbers enter, and
callbacks and prepared commands as plain data.

Holds: callbackdata, enums, errors, limits, recipedata.
May import: the standard library only.
"""
