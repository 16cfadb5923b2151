""".env profiles: provider blocks, profiles, defaults and errors (python-dotenv on a real file)."""

from __future__ import annotations

import re

import pytest

from helpers.models.llm import ConfigError, make_client, resolve_model
from helpers.models.settings import load_env

ENV = {
    "OPENAI_API_KEY": "sk-test-openai",
    "OPENAI_MODEL": "gpt-4o-mini",
    "OPENROUTER_API_KEY": "sk-or-test",
    "LOCAL_BASE_URL": "http://127.0.0.1:1234/v1",
    "LOCAL_MODEL": "qwen3-8b",
    "DEEPSEEK_PROVIDER": "openrouter",
    "DEEPSEEK_MODEL": "deepseek/deepseek-v3.2",
    "DEEPSEEK_TEMPERATURE": "0.1",
}


def test_no_key_means_the_offline_model() -> None:
    config = resolve_model(env={})
    assert config.offline and config.model == "offline-reference"
    assert "offline reference model" in config.describe()


def test_a_key_makes_openai_the_default() -> None:
    config = resolve_model(env={"OPENAI_API_KEY": "sk-x", "OPENAI_MODEL": "gpt-4o"})
    assert (config.provider, config.model, config.api_key) == ("openai", "gpt-4o", "sk-x")
    assert "sk-x" not in repr(config) and "sk-x" not in config.describe()


def test_profiles() -> None:
    deepseek = resolve_model("DeepSeek", env=ENV)
    assert (deepseek.provider, deepseek.model, deepseek.temperature) == (
        "openrouter",
        "deepseek/deepseek-v3.2",
        0.1,
    )
    assert deepseek.base_url == "https://openrouter.ai/api/v1" and deepseek.api_key == "sk-or-test"
    local = resolve_model("local", env=ENV)
    assert (local.base_url, local.model, local.api_key) == (
        "http://127.0.0.1:1234/v1",
        "qwen3-8b",
        "not-needed",
    )
    assert resolve_model("openai", "gpt-5-mini", env=ENV).model == "gpt-5-mini"
    assert resolve_model(env={**ENV, "WORKBOOK_PROFILE": "deepseek"}).profile == "deepseek"
    assert resolve_model("offline", env=ENV).offline


@pytest.mark.parametrize(
    ("profile", "env", "message"),
    [
        ("nosuch", {}, "NOSUCH_PROVIDER"),
        ("openai", {"OPENAI_MODEL": "m"}, "OPENAI_API_KEY"),
        ("local", {"LOCAL_MODEL": "m"}, "LOCAL_BASE_URL"),
        ("openrouter", {"OPENROUTER_API_KEY": "k"}, "OPENROUTER_MODEL"),
        ("x", {"X_PROVIDER": "bogus"}, "X_PROVIDER='bogus'"),
        ("x", {"X_PROVIDER": "offline", "X_TEMPERATURE": "warm"}, "X_TEMPERATURE"),
        ("", {}, "profile name is empty"),  # given empty: not the default in disguise
        ("  ", {"OPENAI_API_KEY": "k"}, "profile name is empty"),
        ("off\x1bline", {}, r"'off\\x1bline' is not a profile name"),
        ("my.server", {"MY.SERVER_PROVIDER": "offline"}, "letters, digits, '-' and '_'"),
        ("-offline", {}, "not starting with '-' or '_'"),
        ("p" * 65, {}, "at most 64"),
        (None, {"WORKBOOK_PROFILE": "bad name"}, r"'bad name' \(WORKBOOK_PROFILE's\) is not a"),
        ("é", {}, "ASCII letters"),
        ("p" * 100_000, {}, r"\(100,000 characters\) is not a profile name"),
    ],
)
def test_clear_errors(profile, env, message) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_model(profile, env=env)


def test_dotenv_file_is_read_and_environment_wins(tmp_path, monkeypatch) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        'TESTPROF_PROVIDER=local\nTESTPROF_MODEL="from-file"\nLOCAL_BASE_URL=http://127.0.0.1:9/v1\n'
    )
    monkeypatch.setenv("TESTPROF_MODEL", "from-env")
    for key in ("TESTPROF_PROVIDER", "LOCAL_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    env = load_env(env_file)
    config = resolve_model("testprof", env=env)
    assert (config.provider, config.model, config.base_url) == (
        "local",
        "from-env",
        "http://127.0.0.1:9/v1",
    )
    for key in ("TESTPROF_PROVIDER", "LOCAL_BASE_URL"):
        monkeypatch.delenv(key, raising=False)


def test_a_planted_env_file_with_a_url_gets_no_key_from_the_shell(tmp_path, monkeypatch) -> None:
    """A ``.env`` in the folder where ``workbook ask`` runs sets OPENAI_BASE_URL alone: the
    shell's OPENAI_API_KEY is never sent to that URL; set beside it (both in the file, or both
    in the shell), the key goes."""
    planted = tmp_path / "planted.env"
    planted.write_text("OPENAI_BASE_URL=https://collector.example/v1\n")
    planted.chmod(0o600)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-shell-key-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    env = load_env(planted)
    with pytest.raises(ConfigError, match=r"OPENAI_BASE_URL comes from .*planted\.env but "
                       "OPENAI_API_KEY from the shell"):  # fmt: skip
        resolve_model("openai", env=env)
    monkeypatch.delenv("OPENAI_BASE_URL")
    both = tmp_path / "both.env"
    both.write_text(
        "OPENAI_BASE_URL=https://proxy.example/v1\nOPENAI_API_KEY=sk-file-key-0123456789\n"
    )
    both.chmod(0o600)
    monkeypatch.delenv("OPENAI_API_KEY")
    config = resolve_model("openai", env=load_env(both))
    assert config.base_url == "https://proxy.example/v1"
    assert config.api_key == "sk-file-key-0123456789"
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(key)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://other.example/v1")  # both in the shell
    monkeypatch.setenv("OPENAI_API_KEY", "sk-shell-key-0123456789")
    assert resolve_model("openai", env=load_env(tmp_path / "none.env")).api_key.startswith("sk-")


def test_clients() -> None:
    offline = make_client(resolve_model("offline", env={}))
    reply = offline.chat.completions.create(
        model="offline-reference", messages=[{"role": "user", "content": "hi"}]
    )
    assert "no plan" in reply.choices[0].message.content
    real = make_client(resolve_model("local", env=ENV), max_retries=5)
    assert str(real.base_url).startswith("http://127.0.0.1:1234/v1") and real.max_retries == 5


def test_profile_settings_come_before_the_providers_and_stay_with_their_endpoint() -> None:
    env = {
        "OPENAI_API_KEY": "sk-openai",
        "DEEPSEEK_PROVIDER": "openai",
        "DEEPSEEK_BASE_URL": "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY": " sk-deepseek \n",
        "DEEPSEEK_MODEL": "deepseek-reasoner",
        "DEEPSEEK_TIMEOUT": "300",
        "OPENAI_ORG_ID": "org-1",
    }
    deepseek = resolve_model("deepseek", env=env)
    assert (deepseek.base_url, deepseek.api_key, deepseek.timeout_s) == (
        "https://api.deepseek.com/v1",
        "sk-deepseek",
        300.0,
    )
    assert not deepseek.is_openai_endpoint and deepseek.organization is None
    client = make_client(deepseek)
    assert client.organization is None and client.project is None
    assert client.timeout == 300.0 and make_client(deepseek, timeout_s=5).timeout == 5
    openai_config = resolve_model("openai", "gpt-4o-mini", env=env)
    assert (
        openai_config.organization == "org-1" and make_client(openai_config).organization == "org-1"
    )
    # a base URL of its own without a provider: an OpenAI-compatible server
    vllm = resolve_model(
        "vllm", env={"VLLM_BASE_URL": "http://10.0.0.2:8000/v1", "VLLM_MODEL": "q"}
    )
    assert (vllm.provider, vllm.api_key) == ("local", "not-needed")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {
                "D_PROVIDER": "openai",
                "D_BASE_URL": "https://x.example/v1",
                "D_MODEL": "m",
                "OPENAI_API_KEY": "sk-o",
            },
            "needs its own D_API_KEY",
        ),
        ({"D_PROVIDER": "openai", "D_MODEL": "m", "OPENAI_API_KEY": "sk a"}, "whitespace inside"),
        ({"D_PROVIDER": "local", "D_BASE_URL": "127.0.0.1:1234", "D_MODEL": "m"}, "not an http"),
        (
            {"D_PROVIDER": "local", "D_BASE_URL": "http://h/v1", "D_MODEL": "m", "D_TIMEOUT": "0"},
            "above 0",
        ),
        (
            {"D_PROVIDER": "openai", "OPENAI_API_KEY": "k"},
            "--model on the command line, model= in Python",
        ),
    ],
)
def test_profile_errors_name_the_setting(env, message) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_model("d", env=env)


def test_a_key_alone_runs_openais_default_model() -> None:
    """OPENAI_API_KEY in the shell and no .env: the openai profile, on gpt-4o-mini (priced in
    data/pricing.yaml); OPENAI_MODEL or --model still choose."""
    from helpers.evaluation.pricing import load_prices
    from helpers.models.llm import DEFAULT_MODELS

    config = resolve_model(env={"OPENAI_API_KEY": "sk-x"})
    assert (config.provider, config.model) == ("openai", DEFAULT_MODELS["openai"])
    assert load_prices().get(config.model).provider == "openai"
    assert (
        resolve_model(env={"OPENAI_API_KEY": "sk-x", "OPENAI_MODEL": "gpt-4.1"}).model == "gpt-4.1"
    )
    assert resolve_model(model="gpt-5", env={"OPENAI_API_KEY": "sk-x"}).model == "gpt-5"


def test_a_profile_without_a_default_names_its_model_setting_once() -> None:
    with pytest.raises(ConfigError) as error:
        resolve_model("openrouter", env={"OPENROUTER_API_KEY": "sk-or-x"})
    assert "set OPENROUTER_MODEL in .env" in str(error.value)
    assert "OPENROUTER_MODEL or OPENROUTER_MODEL" not in str(error.value)


def test_describe_never_shows_a_secret_in_a_base_url() -> None:
    """A base URL may carry a user and a password (a key in its query is refused: see
    test_a_base_url_the_client_cannot_send_to_is_a_config_error_not_a_crash): the line every run
    and notebook 00 print shows scheme, host, port and path only."""
    from helpers.models.llm import resolve_model

    env = {
        "MINE_BASE_URL": "https://alice:hunter2secretpw@llm.example:8443/v1",
        "MINE_API_KEY": "sk-mine-0123456789",
        "MINE_MODEL": "m",
    }
    shown = resolve_model("mine", env=env).describe()
    assert "https://llm.example:8443/v1" in shown
    for secret in ("alice", "hunter2", "sk-mine"):
        assert secret not in shown, shown


def test_a_bad_base_url_is_refused_without_showing_its_secrets() -> None:
    import pytest

    from helpers.models.llm import ConfigError, resolve_model

    env = {
        "EVIL_PROVIDER": "local",
        "EVIL_MODEL": "m",
        "EVIL_BASE_URL": "ftp://u:HUNTER2@h/v1?key=K3Y",
    }
    with pytest.raises(ConfigError) as refused:
        resolve_model("evil", env=env)
    assert "not an http(s) URL" in str(refused.value)
    assert "HUNTER2" not in str(refused.value) and "K3Y" not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://u:HUNTER2@127.0.0.1:9/v\x011?key=K3Y", "control character"),
        ("http://u:HUNTER2@127.0.0.1:99999/v1?key=K3Y", "port is not a number from 1 to 65535"),
        ("http://u:HUNTER2@127.0.0.1:0/v1?key=K3Y", "port is not a number from 1 to 65535"),
        ("http://u:HUNTER2@127.0.0.1:x/v1?key=K3Y", "port is not a number from 1 to 65535"),
        ("http://u:HUNTER2@[::1/v1?key=K3Y", "cannot be read as a URL"),
        ("http://u:HUNTER2@exa\u200bmple.com/v1?key=K3Y", "IDNA"),
        ("http://u:HUNTER2@a..b:9/v1?key=K3Y", "label empty or too long"),
        ("http://u:HUNTER2@.a.com/v1?key=K3Y", "label empty or too long"),
        (f"http://u:HUNTER2@{'a' * 64}.com/v1?key=K3Y", "label empty or too long"),
        ("http://u:HUNTER2@127.0.0.1:9/v1?key=K3Y", "a query or a fragment"),
        ("http://u:HUNTER2@127.0.0.1:9/v1#K3Y", "a query or a fragment"),
    ],
)
def test_a_base_url_the_client_cannot_send_to_is_a_config_error_not_a_crash(url, reason) -> None:
    """The URL is checked by the HTTP client's own parser when the profile is read, so
    ``workbook models`` and ``ask`` say the same thing, naming the setting, and the user,
    password and query never show."""
    env = {"D_PROVIDER": "local", "D_MODEL": "m", "D_BASE_URL": url}
    with pytest.raises(ConfigError, match=reason) as refused:
        resolve_model("d", env=env)
    assert str(refused.value).startswith("D_BASE_URL")
    assert "HUNTER2" not in str(refused.value) and "K3Y" not in str(refused.value)


def test_every_profile_models_lists_is_one_profile_can_run() -> None:
    """A name in ``configured_profiles`` (``workbook models --names``, what completion offers)
    leads back to the settings it was found from: ``Q_W_BASE_URL`` is profile ``q-w``, and a
    key no name leads back to (``q-w_BASE_URL``, ``Dev_BASE_URL``) names no profile."""
    from helpers.models.settings import configured_profiles

    env = {
        "Q_W_BASE_URL": "http://127.0.0.1:9/v1",
        "Q_W_MODEL": "m",
        "q-w_BASE_URL": "http://127.0.0.1:9/v1",
        "Dev_BASE_URL": "http://127.0.0.1:9/v1",
        "LAB2_PROVIDER": "offline",
    }
    names = configured_profiles(env)
    assert names == ["offline", "lab2", "q-w"]
    for name in names:
        assert resolve_model(name, env=env).profile == name


def test_an_offline_profile_runs_the_persona_its_model_setting_names() -> None:
    """``<PROFILE>_MODEL=offline-reference:<persona>`` chooses a persona for everything that
    resolves the model (the notebooks too); a name that is not the offline model's is refused
    with the setting, and the ideal model is the default."""
    from helpers.models.personas import PERSONAS

    offline = {"WORKBOOK_PROFILE": "offline"}
    assert resolve_model(env=offline).model == "offline-reference"
    for name, persona in PERSONAS.items():
        for spelled in (persona.model_name, f"offline-reference:{name}"):
            config = resolve_model(env={**offline, "OFFLINE_MODEL": spelled})
            assert config.offline and config.model == persona.model_name
    quiz = {
        "WORKBOOK_PROFILE": "quiz",
        "QUIZ_PROVIDER": "offline",
        "QUIZ_MODEL": "offline-reference:invents",
    }
    assert resolve_model(env=quiz).model == "offline-reference:invents"
    for wrong, said in (
        (
            "offline-reference:nope",
            "OFFLINE_MODEL='offline-reference:nope': unknown offline persona",
        ),
        ("gpt-4o", "OFFLINE_MODEL='gpt-4o' is not an offline model"),
    ):
        with pytest.raises(ConfigError, match=re.escape(said)):
            resolve_model(env={**offline, "OFFLINE_MODEL": wrong})
    assert resolve_model(env=offline, model="offline-reference:embeds").model.endswith("embeds")
