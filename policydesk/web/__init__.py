"""The web app: FastAPI, server-rendered Jinja2 pages, htmx served from our own static files."""
