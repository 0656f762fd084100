"""End to end: `oomlint server` (the built binary, from OOMLINT_BIN) driven by pytest-lsp's
client, a language client we did not write: open, diagnostics, code action, apply the
edit, edit, hover, configuration change, pull diagnostics."""

import asyncio
import collections
import os
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

OOMLINT = os.environ.get("OOMLINT_BIN", str(pathlib.Path(__file__).resolve().parents[2] / "target/debug/oomlint"))

LEAKY = """import torch


def collect(model, loader, criterion):
    losses = []
    for x, y in loader:
        loss = criterion(model(x), y)
        losses.append(loss)
    return losses
"""

AMP = """from torch.cuda.amp import autocast

with autocast():
    pass
"""


def apply_edits(text, edits):
    """Apply LSP text edits (ASCII text: UTF-16 units are characters)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def offset(position):
        return starts[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def start(client, capabilities, root):
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            initialization_options={"debounceMs": 0, "preview": True},
            root_uri=root.as_uri(),
        )
    )


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[OOMLINT, "server"]))
async def client(lsp_client: LanguageClient):
    yield
    await lsp_client.shutdown_session()


async def diagnostics_for(client, uri, version):
    """The next diagnostics published for `uri`, which must be for `version`."""
    params = await asyncio.wait_for(client.published[uri].get(), timeout=10)
    assert params.version == version, (params.version, version)
    return list(params.diagnostics)


@pytest.fixture
def versions_patch(client):
    """Queue every publishDiagnostics per document, so each is seen once, in order."""
    client.published = collections.defaultdict(asyncio.Queue)
    original = client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def publish(params):
        client.published[params.uri].put_nowait(params)
        return original(params)

    client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    return client


async def test_session_open_fix_edit_hover_configure(versions_patch, tmp_path):
    client = versions_patch
    await start(client, types.ClientCapabilities(), tmp_path)
    uri = (tmp_path / "amp.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=AMP))
    )
    found = await diagnostics_for(client, uri, 1)
    assert [d.code for d in found] == ["OOM003"]
    assert found[0].source == "oomlint"
    # The link to the rule docs opens the docs the server carries, written to a local file.
    href = found[0].code_description.href
    assert href.startswith("file://") and href.endswith("/OOM003-deprecated-cuda-amp.md"), href
    assert types.DiagnosticTag.Deprecated in found[0].tags

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=found[0].range,
            context=types.CodeActionContext(diagnostics=found),
        )
    )
    quick_fix = next(a for a in actions if a.is_preferred)
    fixed = apply_edits(AMP, quick_fix.edit.changes[uri])
    assert fixed == 'from torch.amp import autocast\n\nwith autocast("cuda"):\n    pass\n'

    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    assert await diagnostics_for(client, uri, 2) == []

    # An incremental edit brings a finding back; hover explains it.
    leaky_uri = (tmp_path / "train.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=leaky_uri, language_id="python", version=1, text=LEAKY.replace("append(loss)", "append(loss.item())"))
        )
    )
    assert await diagnostics_for(client, leaky_uri, 1) == []
    removal = types.Range(start=types.Position(line=7, character=26), end=types.Position(line=7, character=33))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=leaky_uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=removal, text="")],
        )
    )
    found = await diagnostics_for(client, leaky_uri, 2)
    assert [d.code for d in found] == ["OOM001"]
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=leaky_uri), position=types.Position(line=7, character=10))
    )
    assert "loss-tensor-kept" in hover.contents.value and "Measured cost" in hover.contents.value

    # Configuration from the client turns the rule off.
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"oomlint": {"ignore": ["OOM001"]}})
    )
    assert await diagnostics_for(client, leaky_uri, 2) == []


async def test_pull_diagnostics(client, tmp_path):
    capabilities = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities())
    )
    await start(client, capabilities, tmp_path)
    uri = (tmp_path / "amp.py").as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri=uri, language_id="python", version=1, text=AMP))
    )
    report = await client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert [d.code for d in report.items] == ["OOM003"]
