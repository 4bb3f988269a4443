"""How numbers are compared: packs gathered into tables (aggregate, collect), each run's
numbers (summary), where answers were lost (blame), intervals and paired tests
(intervals), seeds and conditions (conditions) with the `memorybench compare` command
(compare_command), and reports (report, report_scores, report_tables, report_figures).
Reads finished packs only; never calls a model."""
