"""The board: a static site of finished packs' figures, each with its interval, judge and protocol.

`memorybench board PACKS... --out DIR` (`board_command`): rows per pack (`row`), kept in
board.json between builds (`store`), the protocol contract and its marks (`contract`), the tables,
judge sensitivity and paired differences (`tables`), the pages (`site`, `assets`). docs/board.md.
"""
