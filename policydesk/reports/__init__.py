"""Reports for policy owners and compliance, read in the viewer's scope."""
