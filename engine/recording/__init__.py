"""Recorded denoising trajectories: the compact format and its recorder (`trajectory`), reading a file as the
untrusted input it is (`reader`), and recording a generation's random draws / replaying a recording through the
engine (`replay`).
"""
