"""The commands that look at packs without changing them, one module each: `show` (one
question walked end to end, in text), `view` (the same walk as one static HTML page for many
packs) and `ls` (the packs under a root). The pipeline's stages (`memorybench.stages`) make and
judge packs; these only read them (`memorybench.pack.walk`)."""
