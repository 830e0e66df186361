"""Thin route modules: parse the request, call a service, render a view-model."""
