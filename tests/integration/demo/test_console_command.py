"""`podsizer console` through the CLI: a taken port is one clear error before anything says it serves."""

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
