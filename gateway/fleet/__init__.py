"""Many browsers: the registry of targets, groups, host scans, shares received."""
