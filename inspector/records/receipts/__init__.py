"""Receipts: the JSON + CSV pair a check writes, and their reparse.

``receipt`` is the door (write the pair, prove the export, read it back); ``build`` turns a
check's result into the receipt's content, ``format`` holds the schema and the reader, ``exports``
the export proof (both files reparsed and compared), ``verify`` the independent check of a pair
written earlier, ``exact`` the exact JSON numbers both sides use.
"""
