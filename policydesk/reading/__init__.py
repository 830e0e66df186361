"""Reading text in code, where code can be right: one language module (tokens, stems, stopwords,
number words, sentences, subsections, question parts, which source a question names), the dates
a question writes, entered-date parsing, and whether a question asks what changed.

It imports `versions` (date bases, durations), `contract` (warnings) and `screening` (the
what-changed detector's embeddings); `versions.durations` reads its number words back, a
package-level cycle still to cut (docs/design.md).
"""
