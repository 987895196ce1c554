"""What a page looks like over time: screencasts, recordings and their video, PDFs."""
