"""Multi-query associative recall: the task, its sweep, the recall forecast and reports."""
