"""Cited JSON answers: schema, prompt, synthesizer with validation, and the answerers."""
