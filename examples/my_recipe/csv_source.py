"""A CSV reader: one document per row, read with Arrow's CSV reader in batches (any file named *.csv)."""

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as csv


class CsvSource:
    name = "csv"
    label = "documents read from CSV"
    records_label = "rows of CSV files"
    provides = ("id", "text", "url", "source")
    reasons = ("no_text",)
    suffixes = (".csv",)

    def __init__(
        self, text_column: str = "text", id_column: str = "id", url_column: str | None = "url", delimiter: str = ","
    ):
        self.text, self.id, self.url, self.delimiter = text_column, id_column, url_column, delimiter

    def read(self, stream, uri: str):
        columns = [c for c in (self.id, self.text, self.url) if c]
        reader = csv.open_csv(
            stream,
            parse_options=csv.ParseOptions(delimiter=self.delimiter),
            convert_options=csv.ConvertOptions(
                include_columns=columns, column_types={c: pa.string() for c in columns}, strings_can_be_null=True
            ),
        )
        for batch in reader:
            n = len(batch)
            text = batch.column(self.text).cast(pa.large_string())
            empty = pc.fill_null(pc.equal(pc.utf8_trim_whitespace(text), ""), True)
            yield pa.table(
                {
                    "id": batch.column(self.id),
                    "text": text,
                    "url": batch.column(self.url) if self.url else pa.nulls(n, pa.string()),
                    "source": pa.repeat(pa.scalar(uri), n),
                    "reason": pc.if_else(empty, pa.scalar("no_text"), pa.scalar(None, pa.string())),
                    "details": pa.nulls(n, pa.string()),
                }
            )
