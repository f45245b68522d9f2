"""supervisors package."""
