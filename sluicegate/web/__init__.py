"""HTTP plumbing shared by the webhook API, the console and the codec server."""
