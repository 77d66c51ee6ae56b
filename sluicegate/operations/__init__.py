"""What an operator reads and does, shared by the CLI and the console."""
