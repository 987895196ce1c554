#!/bin/sh
# One remote browser, from the environment:
claude mcp add chrome-ssh --env SSH_PROXY_TO=alice@devvm -- uvx chrome-ssh-gateway
# Several, from a targets file:
claude mcp add chrome-ssh-all -- uvx chrome-ssh-gateway --config "$HOME/.config/chrome-ssh-gateway/devvms.toml"
