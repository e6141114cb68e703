"""Images for DiffusionGemma: what an image costs in prompt tokens (`budget`, pure Python), checking an attachment
with Pillow only (`files`), every Pillow mode to 8-bit RGB (`modes`), and the Gemma 4 image processor with the
prompt expansion (`processor`, the only one that imports MLX).
"""
