"""The app's screens: chat, model picker, conversations, help and small dialogs."""
