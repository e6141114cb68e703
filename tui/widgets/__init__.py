"""The app's widgets: transcript messages, live canvas, sampler panel, attachments, prompt, status bar."""
