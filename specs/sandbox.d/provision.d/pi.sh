#!/usr/bin/env bash
# Profile "pi", its agent phase: points the pi coding agent, which pi.root.sh installed as root just
# before, at the inference endpoint tnk provides. tnk runs this inside the sandbox as the sandbox user,
# without sudo and with no_new_privs, with the TNK_* variables described in docs/specs.md of the tnk
# repository; it runs no program of the agent's home, only writes pi's configuration there.
set -Eeuo pipefail
umask 077

# shellcheck source=lib/provision-lib.sh
source "$(dirname "$0")/lib/provision-lib.sh"

PROFILE_REV="2026-12-07.1"
AGENT_DIR="$HOME/.pi/agent"

# --- inputs (injected by tnk) ------------------------------------------------------------------------
_lib_require_env TNK_MODEL_NAME TNK_CTX_WINDOW
INFERENCE_URL="${TNK_INFERENCE_URL:-${TNK_OPENAI_URL:-}}"
if [[ -z $INFERENCE_URL ]]; then
	_lib_die "missing environment: TNK_INFERENCE_URL (tnk sets it when it provisions a sandbox)"
fi
MODEL_NAME="$TNK_MODEL_NAME"
CTX_WINDOW="$TNK_CTX_WINDOW"
WORKSPACE_MOUNT="${TNK_WORKSPACE_MOUNT:-/workspace}"
ENGINE="${TNK_ENGINE_RUNTIME:-llama}"

if [[ ! $INFERENCE_URL =~ ^https?://[^[:space:][:cntrl:]]+$ ]]; then
	_lib_die "TNK_INFERENCE_URL must be an http(s) URL, got '${INFERENCE_URL}'"
fi
if [[ ! $CTX_WINDOW =~ ^[1-9][0-9]{0,8}$ ]]; then
	_lib_die "TNK_CTX_WINDOW must be a positive whole number of tokens, got '${CTX_WINDOW}'"
fi
case "$ENGINE" in
llama)
	PROVIDER_KEY="llama-cpp"
	API_KEY="llama"
	;;
*)
	if [[ ! $ENGINE =~ ^[A-Za-z0-9_-]+$ ]]; then
		_lib_die "unknown engine runtime '${ENGINE}'"
	fi
	PROVIDER_KEY="$ENGINE"
	API_KEY="$ENGINE"
	;;
esac
# With the profile's `agent_env: [openai]`, tnk sets OPENAI_API_KEY in every session to the sandbox's
# token for the inference gateway; pi reads a variable named in apiKey when it runs, so the token is
# never written into its configuration.
if [[ -n ${OPENAI_BASE_URL:-} ]]; then
	API_KEY="OPENAI_API_KEY"
fi

# The output budget and compaction thresholds follow the context window, so a small window still works.
min() { if (($1 < $2)); then echo "$1"; else echo "$2"; fi; }
MAX_TOKENS="$(min 8192 $((CTX_WINDOW / 4)))"
RESERVE_TOKENS="$(min 16384 $((CTX_WINDOW / 4)))"
KEEP_RECENT_TOKENS="$(min 65536 $((CTX_WINDOW / 2)))"

# --- pi's configuration: rewritten on every run (cheap), so a new model or endpoint needs no reinstall.
write_file() { # write_file PATH: stdin -> PATH, atomically
	cat >"$1.tmp.$$"
	chmod 600 -- "$1.tmp.$$"
	mv -f -- "$1.tmp.$$" "$1"
}

write_pi_config() {
	local provider url api_key model
	provider="$(_lib_json_string "$PROVIDER_KEY")"
	url="$(_lib_json_string "$INFERENCE_URL")"
	api_key="$(_lib_json_string "$API_KEY")"
	model="$(_lib_json_string "$MODEL_NAME")"
	mkdir -p -- "$AGENT_DIR"
	chmod 700 -- "$HOME/.pi" "$AGENT_DIR"
	write_file "$AGENT_DIR/models.json" <<EOF
{
  "providers": {
    ${provider}: {
      "baseUrl": ${url},
      "api": "openai-completions",
      "apiKey": ${api_key},
      "models": [
        {
          "id": ${model},
          "name": ${model},
          "reasoning": true,
          "contextWindow": ${CTX_WINDOW},
          "maxTokens": ${MAX_TOKENS}
        }
      ]
    }
  }
}
EOF
	write_file "$AGENT_DIR/settings.json" <<EOF
{
  "defaultProvider": ${provider},
  "defaultModel": ${model},
  "defaultProjectTrust": "always",
  "defaultThinkingLevel": "medium",
  "retry": {
    "maxRetries": 3,
    "baseDelayMs": 2000
  },
  "compaction": {
    "enabled": true,
    "reserveTokens": ${RESERVE_TOKENS},
    "keepRecentTokens": ${KEEP_RECENT_TOKENS}
  },
  "enableInstallTelemetry": false
}
EOF
	_lib_info "pi configured for model '${MODEL_NAME}' at ${INFERENCE_URL} (${CTX_WINDOW} tokens)"
}

# --- what earlier versions of this profile left in the agent's home: pi now lives in /usr/local ------------
# (The old wrapper is only removed, never run; `rm` is the system's, as PATH holds nothing of the agent's.)
forget_home_install() {
	rm -rf -- "$HOME/.local/lib/tnk-node" "$HOME/.local/lib/tnk-pi"
	if [[ -f $HOME/.local/bin/pi ]] && grep -q "^# Written by tnk's pi profile" -- "$HOME/.local/bin/pi"; then
		rm -f -- "$HOME/.local/bin/pi"
	fi
}

# --- run ------------------------------------------------------------------------------------------------
write_pi_config
forget_home_install
_lib_init_provision_state "pi" "$PROFILE_REV"
_lib_finalize_provision_state

echo "[ OK ] Pi environment initialized successfully."
echo ""
echo "   Pi:           $(pi --version 2>/dev/null || echo "not installed: see pi.root.sh's output above")"
echo "   Model:        ${MODEL_NAME}"
echo "   Context:      ${CTX_WINDOW} tokens"
echo "   Engine URL:   ${INFERENCE_URL}"
echo "   Workspace:    ${WORKSPACE_MOUNT}"
echo ""
echo "   Start Pi with: pi"
