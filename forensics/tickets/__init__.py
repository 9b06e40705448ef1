"""Tickets: post a redacted pack and what it shows to GitHub, GitLab or Jira."""
