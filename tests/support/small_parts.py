"""The real `Api` over a directory with parts forced small, so that paging through parts is walked."""

from skycap_viewer.catalog.index import Catalog
from skycap_viewer.catalog.watcher import Watcher
from skycap_viewer.server.api import Api
from skycap_viewer.views.record.trajectory import PartLimit

SMALL = PartLimit(items=400, bytes=96 * 2**10)


def api_over(root, limit=SMALL) -> Api:
    catalog = Catalog([root])
    Watcher(catalog).poll()
    return Api(catalog, part_limit=limit)
