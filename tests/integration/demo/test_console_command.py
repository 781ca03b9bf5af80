"""`podsizer console` through the CLI: a taken port is one clear error before anything says it serves; a
Prometheus URL given, with no source, means Prometheus (here unreachable), not the demo."""

import socket

import pytest

from podsizer.cli import main


def test_a_taken_port_is_one_line_naming_the_settings_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code = main(
            ["console", "--source", "demo", "--console-host", "127.0.0.1", "--console-port", str(port)]
        )
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.strip() == (
        f"podsizer console: cannot listen on 127.0.0.1:{port} (PODSIZER_CONSOLE_HOST (--console-host), "
        "PODSIZER_CONSOLE_PORT (--console-port)): Address already in use"
    )
    assert "serving" not in captured.out


@pytest.mark.timeout(60)  # served from the demo instead, the command would not return
def test_a_prometheus_url_alone_serves_prometheus_not_the_demo(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PODSIZER_SOURCE", raising=False)
    monkeypatch.delenv("PODSIZER_CONSOLE_SOURCE", raising=False)
    with socket.socket() as closed, socket.socket() as free:
        closed.bind(("127.0.0.1", 0))  # bound, not listening: refused
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
        port = str(free.getsockname()[1])
        free.close()
        code = main(
            ["console", "--prometheus-url", url, "--console-host", "127.0.0.1", "--console-port", port]
        )
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.startswith(
        f"podsizer console: cannot read prometheus ({url.removeprefix('http://')}) "
        "(PODSIZER_PROMETHEUS_URL (--prometheus-url)): cannot reach Prometheus"
    ), captured.err
    assert "serving" not in captured.out and "demo" not in captured.out + captured.err
