"""Research tools: trace diff, corpus survey, never-ending-clip lint, the crowd benchmark, the CSV converter."""
