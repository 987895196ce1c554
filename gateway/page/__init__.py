"""What an agent does on a page: views from the accessibility tree, real input, navigation."""
