"""The Kerncast language server (pygls 2): analysis results of `.cu` and `.ptx` files as editor feedback.

The server holds no analysis logic: it runs `analyze_file` off the event loop (a small thread pool), keeps the
result per document version, and converts it with the small feature modules (`convert`, `hover`, `lenses`,
`actions`). Push diagnostics carry everything important; code lenses and inlay hints repeat the numbers where
the client shows them; hovers and `kerncast.showReport` give the details.

Per document: a newer request supersedes an older one (a superseded result is cached but not published),
analyses of one document run one at a time, and a failure is published as a diagnostic of that document only.
A result keeps the lines it was made from: requests on a document edited since are answered through a line
map into the current text (`textmap.View`), and every column leaves in the client's encoding (`positions`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import gc
import hashlib
import itertools
import logging
import os
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from kerncast.analysis.gpus import list_profiles, load_profile
from kerncast.analysis.input_files import read_regular_text
from kerncast.analysis.kernel_cache import KernelCache
from kerncast.analysis.launch import split_kernel_name
from kerncast.analysis.locate import kernel_places
from kerncast.analysis.pipeline import AnalysisCancelled, analyze_file
from kerncast.analysis.report import FileReport, Finding, KernelReport
from kerncast.analysis.toolchain import shown
from kerncast.server import actions, config, convert, editor_views, hover, last_save, lenses
from kerncast.server.cmd_report import build_page
from kerncast.server.documents import DocumentWorkspace
from kerncast.server.header_diagnostics import HeaderDiagnostics
from kerncast.server.positions import encoding_name, split_lines
from kerncast.server.textmap import View
from lsprotocol import types as lsp
from pygls import uris
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("kerncast.server")

VERSION = "0.1.0"
LANGUAGES = {"cuda", "cuda-cpp", "cpp", "ptx"}
SUFFIXES = {".cu", ".cuh", ".ptx"}
#: seconds a `.ptx` edit waits for the next keystroke before it is analysed
CHANGE_DEBOUNCE_S = 0.5
#: results kept per document (different versions or settings)
CACHE_PER_DOCUMENT = 4
#: documents up to this size are analysed with the garbage collector paused (`gc_paused`); a larger one takes
#: long enough that its garbage is better collected as it goes
GC_PAUSE_MAX_CHARS = 1 << 20

SHOW_REPORT = lenses.SHOW_REPORT  # the command a kernel's lens runs
LIST_GPUS = "kerncast.listGpus"
#: the command the "predict for GPU X" action runs with X: clients without one of their own run this one (VS
#: Code's extension has its own, which takes the id too)
SELECT_GPU = actions.SELECT_GPU
REPORT_PAGE = "kerncast.reportPage"
LINE_COSTS = "kerncast.lineCosts"


@dataclass
class Result:
    """One analysis of one document version under one set of settings."""

    version: int | None
    key: str
    report: FileReport  # typed: JSON is made only for command results (the CLI makes its own)
    lines: list[str]  # the analysed text's lines (`positions.split_lines`)

    @functools.cached_property
    def findings_by_id(self) -> dict[str, Finding]:
        """The findings behind the published diagnostics, by the id each diagnostic carries in `data`."""
        return convert.findings_by_id(self.report)


class KerncastProtocol(LanguageServerProtocol):
    """pygls's protocol, except that a request whose parameters break the LSP schema gets an error response.

    pygls raises while decoding such a message and the request would otherwise never be answered, leaving
    the client waiting.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "method" in data and data.get("id") is not None:
                cause = str(exc.__cause__ or exc).strip()
                detail = cause.splitlines()[0][:200] if cause else type(exc).__name__
                error = JsonRpcInvalidParams(f"invalid params for {str(data['method'])[:80]}: {detail}")
                self._send_response(data["id"], error=error.to_response_error())
            raise


class KerncastServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("kerncast", VERSION, protocol_cls=KerncastProtocol)
        self.settings = config.Settings()
        self.pending_warnings: list[str] = []
        self.executor = ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1)),
                                           thread_name_prefix="kerncast-analysis")
        #: open document key -> the number of its latest analysis request; numbers come from one server-wide
        #: count, so that a closed document's entry can go (nothing per closed document stays behind) and a
        #: reopened one never meets the number of a request made before it was closed
        self.generation: dict[str, int] = {}
        self._requests = itertools.count(1)
        #: document key -> the lock that runs its analyses one at a time (dropped once it is closed and idle)
        self.locks: dict[str, asyncio.Lock] = {}
        self.cache: dict[str, OrderedDict[str, Result]] = {}
        self.published: dict[str, Result] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        #: per open document, its kernel reports (and parsed functions, ptxas numbers, power predictions) by
        #: kernel key across saves: a save re-analyses changed kernels only. Kept per document, not shared, so
        #: that closing a document gives all of it back (a shared bounded cache would hold closed documents'
        #: kernels, hundreds of MB for large PTX, until other analyses pushed them out)
        self.kernel_caches: dict[str, KernelCache] = {}
        #: per open document with an analysis asked for, the signal that it was closed: an analysis still
        #: waiting for a worker when it is set does not start (minutes of CPU and hundreds of MB for a large
        #: PTX that nobody will see, and its text kept alive until then)
        self.close_signals: dict[str, threading.Event] = {}
        #: document key -> the URI exactly as the client sent it (see `key`)
        self.client_uris: dict[str, str] = {}
        #: findings of kernels defined in headers the documents include, published under those headers
        self.headers = HeaderDiagnostics()
        #: document key -> the published result seen from the current text (rebuilt when either changes)
        self.views: dict[str, tuple[Result, int | None, View]] = {}
        #: document key -> (maxFileBytes, the library's refusal) of a document too large to analyse
        self.refused: dict[str, tuple[int, Result]] = {}
        #: per open document, the analysis before the latest one (the lens and hover say what changed)
        self.last_saves = last_save.LastSaves()

    # --------------------------------------------------------------------------------------- settings

    def apply_settings(self, data: Any) -> None:
        settings, warnings = config.parse_settings(data)
        self.settings = settings
        for w in warnings:
            self.warn(w)

    def warn(self, message: str) -> None:
        log.warning(message)
        try:
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
        except Exception:  # noqa: BLE001 - before initialize completes there is no transport yet
            self.pending_warnings.append(message)

    # --------------------------------------------------------------------------------------- capabilities

    def _caps(self, *path: str) -> Any:
        node: Any = self.client_capabilities
        for name in path:
            node = getattr(node, name, None)
            if node is None:
                return None
        return node

    @property
    def versioned_edits(self) -> bool:
        return bool(self._caps("workspace", "workspace_edit", "document_changes"))

    @property
    def encoding(self) -> str:
        """The position encoding chosen at initialize (pygls picks the client's first of UTF-8/16/32 and
        answers it in `ServerCapabilities.positionEncoding`); UTF-16 when the client offered none."""
        try:
            return encoding_name(self.workspace.position_encoding)
        except RuntimeError:  # no workspace before initialize
            return encoding_name(None)

    # --------------------------------------------------------------------------------------- documents

    @staticmethod
    def key(uri: str) -> str:
        """The one form of a document URI used inside the server: the workspace's own (percent-decoded) key.

        Clients percent-encode spaces and non-ASCII characters (`a%20b.cu`) while pygls stores documents
        decoded, so every URI that enters is turned into this key once, and `client_uri` turns it back for
        everything that goes out.
        """
        return unquote(uri)

    def client_uri(self, key: str) -> str:
        """The URI the client used for a document (what diagnostics must be published under)."""
        return self.client_uris.get(key, key)

    def document(self, key: str) -> Any:
        """The open document with this key, or None (closed or never opened)."""
        return self.workspace.text_documents.get(key)

    @staticmethod
    def wants(uri: str, language_id: str | None = None) -> bool:
        path = uris.to_fs_path(uri) or uri
        return os.path.splitext(path)[1].lower() in SUFFIXES or (language_id or "") in LANGUAGES - {"cpp"}

    def folder_of(self, uri: str) -> str | None:
        """The workspace folder that holds the document (the deepest one), else the workspace root."""
        path = uris.to_fs_path(uri)
        folders = [uris.to_fs_path(f.uri) for f in getattr(self.workspace, "folders", {}).values()]
        holding = [f for f in folders if f and path and _contains(f, path)]
        if holding:
            return max(holding, key=len)
        return getattr(self.workspace, "root_path", None)

    def analysis_path(self, uri: str, language_id: str | None) -> str:
        path = uris.to_fs_path(uri)
        if path and os.path.splitext(path)[1].lower() in SUFFIXES:
            return path
        suffix = ".ptx" if language_id == "ptx" else ".cu"
        return (path or "untitled") + suffix

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        generation = self.generation[uri] = next(self._requests)
        task = asyncio.get_running_loop().create_task(self.analyse(uri, generation, delay))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def current(self, uri: str, generation: int) -> bool:
        return self.generation.get(uri) == generation

    async def analyse(self, uri: str, generation: int, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        if not self.current(uri, generation):
            return
        lock = self.locks.setdefault(uri, asyncio.Lock())
        try:
            await self._analyse_locked(uri, generation, lock)
        finally:
            if self.document(uri) is None and self.locks.get(uri) is lock and not lock.locked():
                del self.locks[uri]  # closed: a request still waiting holds the lock itself, and is stale

    async def _analyse_locked(self, uri: str, generation: int, lock: asyncio.Lock) -> None:
        """`analyse` once the request's delay is over: the analysis and publication, under the document's
        lock."""
        async with lock:
            if not self.current(uri, generation):
                return
            doc = self.document(uri)
            if doc is None:  # closed meanwhile: nothing is published for a document the client let go
                return
            try:
                text, version, language = doc.source, doc.version, doc.language_id
            except Exception as exc:  # noqa: BLE001
                log.exception("no document %s", uri)
                self.publish_error(uri, None, f"the document could not be read ({exc})")
                return
            settings = config.for_folder(self.settings, self.folder_of(uri))
            if len(text) > settings.options.max_file_bytes:  # as many UTF-8 bytes at least: too large
                await self.refuse_large(uri, generation, text, version, language, settings)
                return
            self.refused.pop(uri, None)
            build = config.build_stamp(settings, uris.to_fs_path(uri))  # a regenerated compile_commands.json
            key = hashlib.sha1(f"{settings.fingerprint()}\0{build}\0{text}".encode("utf-8", "surrogatepass")
                               ).hexdigest()
            pause = gc_paused() if len(text) <= GC_PAUSE_MAX_CHARS else contextlib.nullcontext()
            with pause:  # from the analysis to the publication: see `gc_paused`
                result = self.cached(uri, version, key)
                if result is None:
                    try:
                        result = await self.run_analysis(uri, self.analysis_path(self.client_uri(uri), language),
                                                         text, version, key, settings)
                    except Exception as exc:  # noqa: BLE001 - one broken document must not affect the others
                        log.exception("analysis of %s failed", uri)
                        if self.current(uri, generation):
                            self.publish_error(uri, version, f"{type(exc).__name__}: {exc}")
                        return
                    if result is None:  # closed before the analysis started, or stopped by the close
                        self.executor.submit(release_memory)  # what the stopped analysis held is garbage now
                        return
                    if self.document(uri) is None:  # closed meanwhile: nobody will ask for this result
                        del result  # before the release below, which must find the report unreferenced
                        self.executor.submit(release_memory)  # the close released before this finished
                        return
                    self.remember(uri, result)
                if not self.current(uri, generation) or self.document(uri) is None:
                    return
                self.publish(uri, result)
                self.last_saves.note(uri, settings.fingerprint(), result.key, result.report)
                asyncio.get_running_loop().call_soon(self.prepare_views, uri, result, text)

    async def refuse_large(self, uri: str, generation: int, text: str, version: int | None,
                           language: str | None, settings: config.Settings) -> None:
        """Publish the refusal of a document above `maxFileBytes`, asking the library once per document and
        limit: after that a keystroke in a 200 MB file costs a length check, not a hash, an encoding and a
        split of its whole text."""
        limit = settings.options.max_file_bytes
        kept = self.refused.get(uri)
        if kept is not None and kept[0] == limit:
            result = Result(version, kept[1].key, kept[1].report, kept[1].lines)
        else:
            try:
                result = await self.run_analysis(uri, self.analysis_path(self.client_uri(uri), language), text,
                                                 version, "", settings, whole_lines=False)
            except Exception as exc:  # noqa: BLE001
                log.exception("refusal of %s failed", uri)
                if self.current(uri, generation):
                    self.publish_error(uri, version, f"{type(exc).__name__}: {exc}")
                return
            if result is None or self.document(uri) is None:
                return
            self.refused[uri] = (limit, result)
        if self.current(uri, generation) and self.document(uri) is not None:
            self.publish(uri, result)

    async def run_analysis(self, uri: str, path: str, text: str, version: int | None, key: str,
                           settings: config.Settings, whole_lines: bool = True) -> Result | None:
        """The analysis off the event loop; the result keeps the text's lines (only the first one when not
        `whole_lines`: a refused file's one finding is there, and splitting 200 MB would cost a second).
        None when the document was closed before a worker took the analysis up."""
        loop = asyncio.get_running_loop()
        doc = self.key(uri)
        # the analysis starts before the progress report, which waits for the client's answer
        job = loop.run_in_executor(self.executor, _analyse_blocking, path, text, settings,
                                   self.kernel_cache_for(doc), self.close_signal(doc))
        token = await self.begin_progress(os.path.basename(path))
        try:
            report = await job
        finally:
            # ended on the loop's next turn: the caller publishes the result first, with no await in between,
            # so the client reads the diagnostics before the progress message, not after
            loop.call_soon(self.end_progress, token)
        if report is None:
            return None
        if not whole_lines:
            end = text.find("\n")
            text = text if end < 0 else text[:end]
        return Result(version, key, report, split_lines(text))

    def kernel_cache_for(self, key: str) -> KernelCache | None:
        """The kernel cache of an open document; None for one that is not open (nothing to keep it for)."""
        if self.document(key) is None:
            return None
        cache = self.kernel_caches.get(key)
        if cache is None:
            cache = self.kernel_caches[key] = KernelCache()
        return cache

    def close_signal(self, key: str) -> threading.Event | None:
        """The signal that an open document was closed; None for one that is not open (nobody closes it)."""
        if self.document(key) is None:
            return None
        signal = self.close_signals.get(key)
        if signal is None:
            signal = self.close_signals[key] = threading.Event()
        return signal

    def forget(self, key: str) -> None:
        """Drop everything kept for a closed document: results, views, kernel cache; and tell its analyses
        that have not started yet not to."""
        signal = self.close_signals.pop(key, None)
        if signal is not None:
            signal.set()
        self.cache.pop(key, None)
        self.published.pop(key, None)
        self.views.pop(key, None)
        self.kernel_caches.pop(key, None)
        self.refused.pop(key, None)
        self.last_saves.forget(key)

    def cached(self, uri: str, version: int | None, key: str) -> Result | None:
        entries = self.cache.get(uri)
        result = entries.get(key) if entries else None
        if result is not None and result.version != version:
            result = Result(version, key, result.report, result.lines)
        return result

    def remember(self, uri: str, result: Result) -> None:
        entries = self.cache.setdefault(uri, OrderedDict())
        entries[result.key] = result
        entries.move_to_end(result.key)
        while len(entries) > CACHE_PER_DOCUMENT:
            entries.popitem(last=False)

    def publish(self, uri: str, result: Result) -> None:
        self.published[uri] = result
        client_uri = self.client_uri(uri)
        diagnostics = convert.to_diagnostics(result.report, client_uri, result.lines, self.encoding)
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=client_uri, version=result.version, diagnostics=diagnostics))
        self.headers.publish(self, uri, result.report)
        self.refresh_views()

    def prepare_views(self, uri: str, result: Result, text: str) -> None:
        """Make what the lenses, hints and hover of a just-published result read from its text (the kernels' and
        launches' places) and the change since the last save, once its diagnostics are out. Made on the first
        lens request instead, they would be made at the next save: Neovim asks for lenses when a buffer is
        written, and that request held the event loop while the save's compile was starting. This runs on the
        event loop too, so it is given the analysed `text`, whose scan the source model kept from the analysis
        (a scan of the lines joined again would read the whole source a second time)."""
        if self.published.get(uri) is not result:  # superseded or closed meanwhile
            return
        try:
            kernel_places(result.report, result.lines, text)
            for k in result.report.kernels:
                self.last_saves.change(uri, result.report, k.name)
        except Exception:  # noqa: BLE001 - a lens request makes them again and reports its own failure
            log.exception("preparing the views of %s failed", uri)

    def publish_error(self, uri: str, version: int | None, message: str) -> None:
        self.published.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
            uri=self.client_uri(uri), version=version, diagnostics=[convert.internal_error_diagnostic(message)]))

    def refresh_views(self) -> None:
        """Ask the client to re-query lenses and hints, only where it says it supports that."""
        requests = []
        if self._caps("workspace", "code_lens", "refresh_support"):
            requests.append(self.workspace_code_lens_refresh_async)
        if self._caps("workspace", "inlay_hint", "refresh_support"):
            requests.append(self.workspace_inlay_hint_refresh_async)
        for request in requests:
            task = asyncio.get_running_loop().create_task(_quietly(request(None)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def begin_progress(self, name: str) -> str | None:
        if not self._caps("window", "work_done_progress"):
            return None
        token = f"kerncast/{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.work_done_progress.create_async(token), 5)
            self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(
                title="Kerncast", message=f"analysing {name}", cancellable=False))
        except Exception:  # noqa: BLE001 - progress is a courtesy; the analysis goes on without it
            log.debug("work done progress refused", exc_info=True)
            return None
        return token

    def end_progress(self, token: str | None) -> None:
        if token is not None:
            try:
                self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message="done"))
            except Exception:  # noqa: BLE001
                log.debug("work done progress end failed", exc_info=True)

    def reanalyse_open(self) -> None:
        for uri, doc in list(self.workspace.text_documents.items()):
            if self.wants(uri, doc.language_id):
                self.schedule(uri)

    # --------------------------------------------------------------------------------------- features

    def result_for(self, uri: str) -> Result | None:
        """The published result for a URI as the client sends it."""
        return self.published.get(self.key(uri))

    def current_text(self, key: str, result: Result) -> tuple[list[str], int | None]:
        """The document's current lines and version (the analysed ones when it is not open)."""
        doc = self.document(key)
        if doc is None:
            return result.lines, result.version
        return split_lines(doc.source), doc.version

    def doc_for_actions(self, uri: str, result: Result) -> actions.Doc:
        """The published result as code actions see it: analysed lines, current lines and version."""
        view = self.view_for(uri, result)
        return actions.Doc(uri=uri, version=view.version, lines=result.lines, versioned=self.versioned_edits,
                           current=view.new, encoding=self.encoding, given_view=view)

    def view_for(self, uri: str, result: Result) -> View:
        """The published result seen from the document's current text (kept until either changes)."""
        key = self.key(uri)
        refused = self.refused.get(key)
        if refused is not None and refused[1].report is result.report:
            # a refused file: only its first line, where the refusal is, and no diff of a huge text
            return View(uri, result.version, result.lines, result.lines, self.encoding, self.versioned_edits)
        doc = self.document(key)
        version = doc.version if doc is not None else result.version
        kept = self.views.get(key)
        if kept is not None and kept[0] is result and kept[1] == version:
            return kept[2]
        current, version = self.current_text(key, result)
        view = View(uri, version, result.lines, current, self.encoding, self.versioned_edits)
        self.views[key] = (result, version, view)
        return view


_gc_pauses = 0


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off from a save's analysis to the publication of its result.

    The server keeps tens of thousands of objects alive (cached reports and parsed functions, the power model),
    and a full collection that happens to start during an analysis traverses all of them: tens of milliseconds
    added to the save. Collection resumes once the result is published (pauses nest, as two documents may be
    analysed at once), and the analysis's garbage is collected then, off the path the user waits on."""
    global _gc_pauses
    _gc_pauses += 1
    gc.disable()
    try:
        yield
    finally:
        _gc_pauses -= 1
        if _gc_pauses == 0:
            gc.enable()


def release_memory() -> None:
    """Give the memory of a closed document's analysis back: collect its cycles, then let the C heap
    return freed pages to the system (glibc keeps them otherwise, and the server's size never goes down).
    """
    gc.collect()
    if sys.platform.startswith("linux"):
        # not glibc: the collected memory is reused by the next analysis instead
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6").malloc_trim(0)


def _analyse_blocking(path: str, text: str, settings: config.Settings, cache: KernelCache | None = None,
                      closed: threading.Event | None = None) -> FileReport | None:
    """The analysis, off the event loop in an executor job; None when the document was closed: at once when
    that happened while the job waited for a worker, else within one kernel's work (`AnalysisCancelled`)."""
    try:
        return analyze_file(path, text=text, options=settings.options, cache=cache, cancel=closed)
    except AnalysisCancelled:
        return None


async def _quietly(awaitable: Any) -> None:
    try:
        await asyncio.wait_for(awaitable, 10)
    except Exception:  # noqa: BLE001 - a client that fails a refresh request still gets fresh data next time
        log.debug("refresh request failed", exc_info=True)


def _contains(folder: str, path: str) -> bool:
    try:
        return os.path.commonpath([folder, path]) == folder
    except ValueError:  # different drives, or a relative path
        return False


server = KerncastServer()


@server.feature(lsp.INITIALIZE)
def initialize(ls: KerncastServer, params: lsp.InitializeParams) -> None:
    # pygls has just made the workspace; it adds no state, only applies changes faster and on LSP's lines
    ls.workspace.__class__ = DocumentWorkspace
    settings, warnings = config.parse_settings(params.initialization_options)
    ls.settings = settings
    ls.pending_warnings.extend(warnings)


@server.feature(lsp.INITIALIZED)
def initialized(ls: KerncastServer, params: lsp.InitializedParams) -> None:
    warnings, ls.pending_warnings = ls.pending_warnings, []
    for w in warnings:
        ls.warn(w)


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: KerncastServer, params: lsp.DidChangeConfigurationParams) -> None:
    data = config.unwrap(params.settings)
    if not (isinstance(data, dict) and data) and ls._caps("workspace", "configuration"):
        try:
            items = await ls.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="kerncast")]))
            data = items[0] if items else None
        except Exception:  # noqa: BLE001
            log.debug("workspace/configuration failed", exc_info=True)
            return
    if data is None:
        return
    ls.apply_settings(data)
    ls.reanalyse_open()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: KerncastServer, params: lsp.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.client_uris[ls.key(uri)] = uri
    if ls.wants(uri, params.text_document.language_id):
        ls.schedule(ls.key(uri))


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
def did_save(ls: KerncastServer, params: lsp.DidSaveTextDocumentParams) -> None:
    key = ls.key(params.text_document.uri)
    doc = ls.document(key)
    if doc is not None and ls.wants(params.text_document.uri, doc.language_id):  # a closed one: nothing
        ls.schedule(key)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: KerncastServer, params: lsp.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    doc = ls.document(ls.key(uri))
    is_ptx = uri.lower().endswith(".ptx") or (doc is not None and doc.language_id == "ptx")
    if is_ptx and doc is not None and ls.settings.analyze_on_change:
        ls.schedule(ls.key(uri), CHANGE_DEBOUNCE_S)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: KerncastServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    key = ls.key(uri)
    ls.generation.pop(key, None)  # drops any analysis in flight: no request of it is current any more
    ls.forget(key)  # the results of a closed document are memory nobody will ask for again
    ls.client_uris.pop(key, None)
    lock = ls.locks.get(key)
    if lock is not None and not lock.locked():
        del ls.locks[key]
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
    ls.headers.forget(ls, key)
    ls.executor.submit(release_memory)


def _hovered_kernel(result: Result, pos: lsp.Position) -> KernelReport | None:
    """The kernel whose name or `<<<>>>` launch is under the cursor."""
    kernels, lines = result.report.kernels, result.lines
    report = result.report
    for k in kernels:
        anchor = convert.kernel_anchor(report, lines, k)
        if anchor and anchor.line == pos.line and anchor.start <= pos.character <= anchor.end:
            return k
    # a launch may be of a kernel that a header defines (the header shows its name's hover and lens)
    for mangled, start, end in convert.launch_calls(report, lines, pos.line):
        if start <= pos.character <= end + 1:
            return report.kernel(mangled)
    return None


def _add_explanation(result: Result, name: str) -> None:
    """Fill in one kernel's power explanation, exact contributions and LIME weights (blocking; run in the
    executor)."""
    # lazy import: the power runtime, which the server's start-up need not wait for
    from kerncast.analysis.stages.power import complete_explanation

    for kr in result.report.kernels:
        if kr.name == name:
            complete_explanation(kr.power)


async def with_explanation(ls: KerncastServer, result: Result, kernel: KernelReport) -> KernelReport:
    """The kernel with its power explanation, computed off the event loop the first time it is asked for
    (the report is completed in place)."""
    if kernel.power is None or not kernel.power.explanation_incomplete():
        return kernel
    try:
        await asyncio.get_running_loop().run_in_executor(ls.executor, _add_explanation, result, kernel.name)
    except Exception:  # noqa: BLE001 - a hover without the explanation still gives the power
        log.exception("power explanation failed")
    return kernel


def _hover_markdown(result: Result, pos: lsp.Position, k: KernelReport | None,
                    since: str | None = None) -> str | None:
    """Markdown for the kernel `k` under the cursor (with `since`, its change since the last save), else for
    the findings on the cursor's line, else None."""
    report, lines = result.report, result.lines
    if k is not None:
        return last_save.with_change(hover.kernel_markdown(k, report.gpu or "?", report.arch,
                                                           compiler=report.compiler, file_notes=report.notes,
                                                           gpu_name=report.gpu_name),
                                     since)
    found = []
    for f in convert.all_findings(report):
        rng = convert.finding_range(report, lines, f)
        if rng.start.line <= pos.line <= rng.end.line:
            found.append(hover.finding_markdown(f))
    return "\n---\n".join(found) if found else None


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def on_hover(ls: KerncastServer, params: lsp.HoverParams) -> lsp.Hover | None:
    result = ls.result_for(params.text_document.uri)
    if result is None:
        return None
    try:
        pos = ls.view_for(params.text_document.uri, result).position_in(params.position)
        if pos is None:  # a line typed or changed since the analysis: nothing known about it yet
            return None
        k = _hovered_kernel(result, pos)
        since = None
        if k is not None:
            since = ls.last_saves.change(ls.key(params.text_document.uri), result.report, k.name)
            k = await with_explanation(ls, result, k)
        text = _hover_markdown(result, pos, k, since)
    except Exception:  # noqa: BLE001 - a hover never takes the server down
        log.exception("hover failed")
        return None
    if text is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text))


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
def on_code_lens(ls: KerncastServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    result = ls.result_for(params.text_document.uri)
    if result is None:
        return []
    try:
        view = ls.view_for(params.text_document.uri, result)
        out = []
        key = ls.key(params.text_document.uri)
        since = functools.partial(ls.last_saves.change, key, result.report)
        for lens in lenses.code_lenses(result.report, params.text_document.uri, result.lines, since):
            rng = view.range_out(lens.range)
            if rng is not None:  # a kernel whose name line changed since the analysis gets no lens yet
                lens.range = rng
                out.append(lens)
        return out
    except Exception:  # noqa: BLE001
        log.exception("code lens failed")
        return []


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
def on_inlay_hint(ls: KerncastServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    result = ls.result_for(params.text_document.uri)
    if result is None:
        return []
    try:
        view = ls.view_for(params.text_document.uri, result)
        everywhere = lsp.Range(lsp.Position(0, 0), lsp.Position(len(result.lines), 0))
        out = []
        for hint in lenses.inlay_hints(result.report, result.lines, everywhere):
            pos = view.position_out(hint.position)
            if pos is not None and params.range.start.line <= pos.line <= params.range.end.line:
                hint.position = pos
                out.append(hint)
        return out
    except Exception:  # noqa: BLE001
        log.exception("inlay hints failed")
        return []


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
    code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.Source]))
def on_code_action(ls: KerncastServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    result = ls.result_for(uri)
    if result is None:
        return []
    try:
        doc = ls.doc_for_actions(uri, result)
        rng = doc.view.range_in(params.range)
        if rng is None:  # only lines typed or changed since the analysis: no fix was made for them
            return []
        return actions.code_actions(result.report, doc, rng, params.context.diagnostics, list_profiles(),
                                    ls.settings.options.gpu, params.context.only, result.findings_by_id)
    except Exception:  # noqa: BLE001
        log.exception("code actions failed")
        return []


# ------------------------------------------------------------------------------------------- commands


def _kernel_at(result: Result, target: Any, view: View | None = None) -> KernelReport | None:
    """The kernel a command names: by name, or by a `{line}` of the current text (`view` maps it)."""
    kernels = result.report.kernels
    if isinstance(target, str):
        return next((k for k in kernels if target in (k.name, k.mangled, split_kernel_name(k.name)[0])), None)
    if isinstance(target, dict) and isinstance(target.get("line"), int):
        line = target["line"] if view is None else view.map.to_old_at_or_above(target["line"])
        if line is None:
            return kernels[0] if kernels else None
        anchors = [(convert.kernel_anchor(result.report, result.lines, k), k) for k in kernels]
        # the kernel whose definition starts last at or before the cursor line
        before = [(a.line, k) for a, k in anchors if a is not None and a.line <= line]
        if before:
            return max(before, key=lambda t: t[0])[1]
        return kernels[0] if kernels else None
    return None


@server.command(SHOW_REPORT)
async def show_report(ls: KerncastServer, *args: Any) -> dict[str, Any] | None:
    """`[uri, kernelName]` or `[uri, {line, character}]` -> `{markdown}` (every kernel when no kernel fits)."""
    if not args or not isinstance(args[0], str):
        raise ValueError("kerncast.showReport expects [uri, kernelName] or [uri, {line, character}]")
    uri, target = args[0], (args[1] if len(args) > 1 else None)
    result = ls.result_for(uri)
    if result is None:
        path = uris.to_fs_path(uri)
        try:  # a regular file under the size limit only (input_files): never a FIFO, a device, a huge file
            text = read_regular_text(path, ls.settings.options.max_file_bytes) if path else None
        except OSError:
            text = None
        if text is None:
            return None
        result = await ls.run_analysis(uri, path, text, None, "", ls.settings)
        if result is None:  # opened and closed again while it waited for a worker
            return None
    report = result.report
    k = _kernel_at(result, target, ls.view_for(uri, result) if ls.result_for(uri) is result else None)
    if k is None:
        return {"markdown": hover.file_markdown(report)}
    k = await with_explanation(ls, result, k)
    return {"markdown": hover.kernel_markdown(k, report.gpu or "?", report.arch, full=True,
                                              compiler=report.compiler, file_notes=report.notes,
                                              gpu_name=report.gpu_name),
            "kernel": k.name}


def _published_for(ls: KerncastServer, args: tuple[Any, ...], command: str) -> tuple[str, Result] | None:
    """The URI a command names (`[uri]`) and the analysis published for it, or None when there is none."""
    if not args or not isinstance(args[0], str):
        raise ValueError(f"{command} expects [uri]")
    result = ls.result_for(args[0])
    return (args[0], result) if result is not None else None


@server.command(REPORT_PAGE)
async def report_page(ls: KerncastServer, *args: Any) -> dict[str, Any] | None:
    """`[uri]` -> `{html}`: the report page (`kerncast report --html`) of the published analysis, for a view
    inside the editor; None before the document's first analysis."""
    found = _published_for(ls, args, REPORT_PAGE)
    if found is None:
        return None
    result = found[1]
    html = await asyncio.get_running_loop().run_in_executor(ls.executor, build_page, [result.report],
                                                             "\n".join(result.lines))
    return {"html": html}


@server.command(LINE_COSTS)
def line_costs(ls: KerncastServer, *args: Any) -> dict[str, Any] | None:
    """`[uri]` -> `{version, lines: [{line, share, uj, kernel, label}]}`: the hot lines of the published analysis
    in the current text (0-based lines), for a line decoration; None before the first analysis."""
    found = _published_for(ls, args, LINE_COSTS)
    if found is None:
        return None
    uri, result = found
    view = ls.view_for(uri, result)

    def line_out(line: int) -> int | None:
        pos = view.position_out(lsp.Position(line, 0))
        return pos.line if pos is not None else None

    return {"version": view.version, "lines": editor_views.line_costs(result.report, line_out)}


@server.command(LIST_GPUS)
def list_gpus(ls: KerncastServer, *args: Any) -> list[dict[str, Any]]:
    out = []
    for gid in list_profiles():
        try:
            p = load_profile(gid)
            out.append({"id": gid, "name": p.name, "calibrated": p.calibrated,
                        "selected": gid == ls.settings.options.gpu})
        except Exception as exc:  # noqa: BLE001 - a broken profile is listed, not fatal
            out.append({"id": gid, "name": f"{gid} (cannot load: {exc})", "calibrated": False,
                        "selected": False})
    return out


@server.command(SELECT_GPU)
def select_gpu(ls: KerncastServer, *args: Any) -> dict[str, Any]:
    gpu = args[0] if args else None
    if isinstance(gpu, dict):
        gpu = gpu.get("id")
    if not isinstance(gpu, str) or gpu not in list_profiles():
        ls.warn(f"Kerncast: unknown GPU {shown(gpu)}; the GPU stays {ls.settings.options.gpu}")
        return {"gpu": ls.settings.options.gpu, "changed": False}
    ls.settings = config.with_gpu(ls.settings, gpu)
    ls.reanalyse_open()
    return {"gpu": gpu, "changed": True}


def main() -> None:
    """Serve on stdio."""
    server.start_io()
