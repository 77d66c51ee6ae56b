"""The Temporal connection, the payload codec and its server, the Schedules, the admitter."""
