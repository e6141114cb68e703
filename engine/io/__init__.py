"""Reading what a model is made of: finding and reading a checkpoint (`checkpoint`: config, generation config,
safetensors weights), `engine.load` (`loader`), the tokenizer and chat format (`tokenizer`), and JSON from
someone else parsed only once its nesting is known to be shallow (`bounded_json`).
"""
