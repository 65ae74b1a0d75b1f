// Satchel player: W3C Encrypted Media Extensions with the Clear Key key system (org.w3.clearkey).
//
// The license request of a session (a JSON {"kids": [...], "type": "temporary"} the browser writes) is posted
// to Satchel's /clearkey/license with the entitlement token as a Bearer credential; the answer (a JSON Web Key
// Set) is given back to the session. A refusal arrives as RFC 9457 problem+json and becomes a LicenseError that
// says in plain words why nothing plays.

/** A license the server refused, or could not give. `type` is the problem type ("not-entitled", …). */
export class LicenseError extends Error {
  constructor(type, status, detail) {
    super(LicenseError.plainWords(type, detail));
    this.name = "LicenseError";
    this.type = type;
    this.status = status;
    this.detail = detail;
  }

  /** What a viewer is told for each refusal the license service gives. */
  static plainWords(type, detail = "") {
    switch (type) {
      case "missing-entitlement":
        return "No entitlement token was given, so no license can be requested. Open this page with #token=… in its address.";
      case "invalid-entitlement":
        return /expired/i.test(detail)
          ? "Your entitlement token has expired. Get a new one and reload the page."
          : "The entitlement token is not valid (it may be damaged or signed by an unknown key).";
      case "not-entitled":
        return "Your entitlement token does not cover this video: it was issued for another asset.";
      case "policy-denied":
        return "This video may not be played now: its availability window is closed.";
      case "unknown-asset":
        return "The license server does not know this video's key.";
      case "network":
        return "The license server could not be reached. Check the connection and reload.";
      default:
        return `The license server refused the license${detail ? `: ${detail}` : "."}`;
    }
  }
}

const hex = (bytes) => Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
const base64url = (hexText) => btoa(String.fromCharCode(...hexText.match(/../g).map((pair) => parseInt(pair, 16))))
  .replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** The common system ID (W3C "cenc" Initialization Data Format), the system Clear Key reads. */
const COMMON_SYSTEM_ID = "1077efecc0b24d02ace33c1e52e2fb4b";

/**
 * The key IDs a `cenc` initialization data names: the KID list of every version-1 `pssh` box of the common system
 * (ISO/IEC 23001-7 §8.1). Other systems' boxes (Widevine's, PlayReady's in a multi-DRM package) and boxes that
 * name none (version 0) add nothing; a box cut short ends the reading.
 * @param {ArrayBuffer} initData
 * @returns {string[]} key IDs as 32 hex digits
 */
export function keyIDsOfPSSH(initData) {
  const view = new DataView(initData);
  const found = [];
  let offset = 0;
  while (offset + 32 <= view.byteLength) {
    const size = view.getUint32(offset);
    if (size < 32 || offset + size > view.byteLength) break;
    const type = String.fromCharCode(...new Uint8Array(initData, offset + 4, 4));
    const version = view.getUint8(offset + 8);
    const system = hex(new Uint8Array(initData, offset + 12, 16));
    if (type === "pssh" && version >= 1 && size >= 36 && system === COMMON_SYSTEM_ID) {
      const count = view.getUint32(offset + 28);
      if (32 + count * 16 + 4 <= size) {
        for (let index = 0; index < count; index += 1) {
          const kid = hex(new Uint8Array(initData, offset + 32 + index * 16, 16));
          if (!found.includes(kid)) found.push(kid);
        }
      }
    }
    offset += size;
  }
  return found;
}

/**
 * Clear Key on a video element: asks for the key system, sets the MediaKeys, and requests licenses for the key
 * IDs it is told of (from the MPD) and for any others the media's `pssh` boxes name.
 */
export class ClearKeySession {
  /**
   * @param {HTMLVideoElement} video
   * @param {{licenseURL: string, token: string|null, onLicense: function(Date|null): void, onError: function(Error): void}} options
   */
  constructor(video, { licenseURL, token, onLicense, onError }) {
    this.video = video;
    this.licenseURL = licenseURL;
    this.token = token;
    this.onLicense = onLicense;
    this.onError = onError;
    this.requested = new Set();
    this.sessions = [];
  }

  /**
   * Sets up the key system for the renditions' content types.
   * @param {{videoTypes: string[], audioTypes: string[], scheme: string|null}} media
   */
  async attach({ videoTypes, audioTypes, scheme }) {
    if (!navigator.requestMediaKeySystemAccess) {
      throw new Error("This browser has no Encrypted Media Extensions here (they need https or localhost).");
    }
    const capability = (contentType) => (scheme ? { contentType, encryptionScheme: scheme } : { contentType });
    let access;
    try {
      access = await navigator.requestMediaKeySystemAccess("org.w3.clearkey", [{
        initDataTypes: ["cenc", "keyids"],
        videoCapabilities: videoTypes.map(capability),
        audioCapabilities: audioTypes.map(capability),
      }]);
    } catch {
      throw new Error(`This browser cannot play this video with Clear Key (${[...videoTypes, ...audioTypes].join(", ")}, ${scheme ?? "clear"}).`);
    }
    this.mediaKeys = await access.createMediaKeys();
    await this.video.setMediaKeys(this.mediaKeys);
    this.video.addEventListener("encrypted", (event) => {
      if (event.initDataType !== "cenc" || !event.initData) return;
      this.request(keyIDsOfPSSH(event.initData)).catch(this.onError);
    });
  }

  /** Requests one license for the key IDs not requested yet. */
  async request(keyIDs) {
    const fresh = keyIDs.filter((kid) => !this.requested.has(kid));
    if (fresh.length === 0) return;
    fresh.forEach((kid) => this.requested.add(kid));
    const session = this.mediaKeys.createSession("temporary");
    this.sessions.push(session);
    session.addEventListener("message", (event) => {
      this.fetchLicense(event.message).then((license) => session.update(license)).catch(this.onError);
    });
    const initData = new TextEncoder().encode(JSON.stringify({ kids: fresh.map(base64url) }));
    await session.generateRequest("keyids", initData);
  }

  /** Posts a license request; resolves to the license, or rejects with a LicenseError. */
  async fetchLicense(message) {
    const headers = { "Content-Type": "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let response;
    try {
      response = await fetch(this.licenseURL, { method: "POST", headers, body: message, credentials: "omit", cache: "no-store" });
    } catch {
      throw new LicenseError("network", 0, "");
    }
    if (!response.ok) {
      let problem = {};
      try { problem = await response.json(); } catch { /* not problem+json: the status says enough */ }
      const type = String(problem.type ?? "").split("/").pop() || `http-${response.status}`;
      throw new LicenseError(type, response.status, String(problem.detail ?? ""));
    }
    const expires = response.headers.get("Satchel-License-Expires");
    this.onLicense(expires ? new Date(expires) : null);
    return response.arrayBuffer();
  }

  /** Closes every session (the keys leave the browser's memory). */
  async close() {
    await Promise.allSettled(this.sessions.map((session) => session.close()));
  }
}
