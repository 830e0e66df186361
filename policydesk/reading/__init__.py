"""Reading text in code, where code can be right: one language module (tokens, stems, stopwords,
number words, sentences, subsections, question parts, which source a question names) and the
dates a question writes.

It imports `versions` (date bases, entered dates, the number-word table) and `contract` (warnings).
"""
