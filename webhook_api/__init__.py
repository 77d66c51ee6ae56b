"""The stateless webhook API: authenticate, validate, run intake, answer with the receipt."""

from webhook_api._app import create_app

__all__ = ["create_app"]
