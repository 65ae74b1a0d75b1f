// Satchel player: the /play/{assetId} page. Finds the entitlement token (the address's #token=…, else the
// demo's token endpoint), starts a SatchelPlayer on the page's <video>, and shows its state, the license's
// expiry, the rendition, and any error in plain words. `window.satchel` exposes the player for tests.

import { SatchelPlayer } from "./player.js";

const root = document.querySelector("[data-asset]");
const asset = root.dataset.asset;
const video = document.querySelector("video");
const stateLabel = document.getElementById("state");
const expiryLabel = document.getElementById("expiry");
const renditionLabel = document.getElementById("rendition");
const qualitySelect = document.getElementById("quality");
const errorBox = document.getElementById("error");

const stateWords = {
  idle: "Idle", loading: "Loading…", licensing: "Requesting license…", buffering: "Buffering…",
  playing: "Playing", paused: "Paused", ended: "Ended", error: "Cannot play",
};

/** The token: from the address's fragment (then removed from the address bar), else from the demo endpoint. */
async function entitlementToken() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    history.replaceState(null, "", location.pathname + location.search);
    return given;
  }
  if (!root.dataset.tokenEndpoint) return null;
  try {
    const response = await fetch(root.dataset.tokenEndpoint, { cache: "no-store", credentials: "same-origin" });
    if (!response.ok) return null;
    return (await response.json()).token ?? null;
  } catch {
    return null;
  }
}

function showExpiry(expires) {
  clearInterval(showExpiry.timer);
  if (!expires || Number.isNaN(expires.getTime())) {
    expiryLabel.textContent = "No expiry given";
    return;
  }
  const update = () => {
    const seconds = Math.round((expires.getTime() - Date.now()) / 1000);
    // One convention with the dashboard: 24-hour UTC, the zone said.
    const clock = `${expires.toISOString().slice(0, 19).replace("T", " ")} UTC`;
    if (seconds <= 0) {
      expiryLabel.textContent = `Expired at ${clock}`;
      expiryLabel.dataset.expired = "true";
      return;
    }
    const left = seconds >= 3600 ? `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`
      : seconds >= 60 ? `${Math.floor(seconds / 60)} min` : `${seconds} s`;
    expiryLabel.textContent = `Valid until ${clock} (${left} left)`;
  };
  update();
  showExpiry.timer = setInterval(update, 15000);
  expiryLabel.dataset.expires = expires.toISOString();
}

function describe(representation) {
  const kbps = Math.round(representation.bandwidth / 1000);
  return representation.width ? `${representation.width}×${representation.height} · ${kbps} kb/s` : `${kbps} kb/s`;
}

async function start() {
  const token = await entitlementToken();
  const player = new SatchelPlayer(video, { manifestURL: root.dataset.manifest, licenseURL: root.dataset.license, token });
  window.satchel = { player, errors: [] };
  player.addEventListener("state", (event) => {
    stateLabel.textContent = stateWords[event.detail] ?? event.detail;
    stateLabel.dataset.state = event.detail;
    document.body.dataset.state = event.detail;
  });
  player.addEventListener("license", (event) => showExpiry(event.detail));
  player.addEventListener("rendition", (event) => {
    renditionLabel.textContent = describe(event.detail);
    renditionLabel.dataset.id = event.detail.id;
  });
  player.addEventListener("error", (event) => {
    const error = event.detail;
    window.satchel.errors.push({ name: error.name, type: error.type ?? null, message: error.message });
    errorBox.textContent = error.message;
    errorBox.hidden = false;
    qualitySelect.disabled = true;
  });
  qualitySelect.addEventListener("change", () => player.setQuality(qualitySelect.value));
  await player.load();
  for (const representation of player.renditions) {
    const option = document.createElement("option");
    option.value = representation.id;
    option.textContent = describe(representation);
    qualitySelect.append(option);
  }
  qualitySelect.disabled = player.failed || player.renditions.length < 2;
  document.getElementById("scheme").textContent = player.manifest?.scheme ? `${player.manifest.scheme} · Clear Key` : "clear";
  document.getElementById("kids").textContent = player.manifest?.keyIDs.join(", ") || "—";
  if (!player.failed) video.play().catch(() => { /* autoplay refused: the viewer presses play */ });
}

start();
