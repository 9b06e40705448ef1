"""Reading wrapper scripts: a tolerant shell reader, the masking rules, ShellCheck, lint."""
