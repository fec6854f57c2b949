"""Token corpora: the corpus files, the local byte-level BPE tokenizer, tokenised splits."""
