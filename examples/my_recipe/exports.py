"""An export format: the documents' text alone, one document after another with a blank line between (the input
a tokenizer trainer such as SentencePiece reads), one .txt file per part."""

import pyarrow as pa
import pyarrow.compute as pc


class PlainText:
    label = "plain text"
    suffix = ".txt"

    def __init__(self, separator: str = "\n\n"):
        self.separator = separator

    def write(self, table: pa.Table, out) -> None:
        text = pc.drop_null(table.column("text").combine_chunks()).cast(pa.large_string())
        if len(text):
            separator = pa.scalar(self.separator, pa.large_string())
            whole = pc.binary_join(pa.LargeListArray.from_arrays([0, len(text)], text), separator)
            out.write(whole[0].as_buffer().to_pybytes() + self.separator.encode())
