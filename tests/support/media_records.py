"""A copy of the corpus's `tr_media` made heavy: a node of 100,000 media items and an 11 MB image."""

MANY = 100_000  # media items of one node
IMAGE_BYTES = 11_000_000  # of one data URL


def heavy(document):
    """Node 0 with 100k media items (each a valid one-token range), node 2 with an image as an 11 MB data URL."""
    nodes = document["nodes"]
    item = nodes[0]["tokens"]["media"][0]
    nodes[0]["tokens"]["media"] = [{**item, "offset": i % 20, "length": 1, "hash": f"h{i:06d}"} for i in range(MANY)]
    nodes[2]["message"]["content"] = [{"type": "text", "text": "look"}, {
        "type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * IMAGE_BYTES}}]
