"""C6: the variant comparison, its verdicts and effect sizes, learning-rate studies, GPU reports."""
