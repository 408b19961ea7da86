"""Commands built on the commit and the log (OPTIMIZE, VACUUM, RESTORE, CONVERT, CLONE); neither the log
nor the commit ever imports them."""
