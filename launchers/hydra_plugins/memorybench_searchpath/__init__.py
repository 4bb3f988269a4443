"""Hydra search-path plugin: memorybench plugins' config folders after memorybench's own."""
