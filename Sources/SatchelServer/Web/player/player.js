// Satchel player: a DASH package played with Media Source Extensions, its keys from Clear Key (clearkey.js).
//
// One SourceBuffer per kind (video, audio). Each is fed in order, segment after segment, while less than
// AHEAD seconds are buffered past the playhead; a seek moves the feeding to the segment that holds the new
// time; a quality change (one rendition, or "auto" by measured throughput) takes effect at the next segment,
// and at once for a rendition picked by hand (what is buffered past the current segment is replaced).
// The player reports what happens as events: "state" (detail: the new state), "license" (detail: expiry),
// "rendition" (detail: the video rendition now fed) and "error" (detail: an Error in plain words).

import { parseMPD } from "./mpd.js";
import { ClearKeySession } from "./clearkey.js";

/** Seconds buffered ahead of the playhead. */
export const AHEAD = 20;
/** Seconds kept behind the playhead (older media is removed so long videos never fill the buffer). */
export const BEHIND = 30;

/** One kind of media: its SourceBuffer, the rendition fed, the next segment to feed. */
class Track {
  constructor(kind, representation, sourceBuffer) {
    this.kind = kind;
    this.representation = representation;
    this.buffer = sourceBuffer;
    this.next = 0;
    this.initOf = null;      // the rendition whose initialization segment the buffer last received
    this.busy = false;
    this.generation = 0;     // bumped by seeks and switches: a fetch of an older generation is dropped
    this.flushFrom = null;   // remove what is buffered from this time on before the next append
  }

  /** The index of the segment that holds `time` (the last one past the end). */
  indexAt(time) {
    const segments = this.representation.segments;
    const index = segments.findIndex((segment) => segment.end > time + 0.001);
    return index < 0 ? segments.length : index;
  }

  bufferedEnd(time) {
    for (let index = 0; index < this.buffer.buffered.length; index += 1) {
      if (this.buffer.buffered.start(index) <= time + 0.5 && this.buffer.buffered.end(index) > time) return this.buffer.buffered.end(index);
    }
    return time;
  }

  /** Runs one SourceBuffer operation and waits for it. */
  operate(run) {
    return new Promise((resolve, reject) => {
      const done = () => { this.buffer.removeEventListener("error", failed); resolve(); };
      const failed = () => { this.buffer.removeEventListener("updateend", done); reject(new Error(`the browser refused the ${this.kind} data`)); };
      this.buffer.addEventListener("updateend", done, { once: true });
      this.buffer.addEventListener("error", failed, { once: true });
      try { run(); } catch (error) {
        this.buffer.removeEventListener("updateend", done);
        this.buffer.removeEventListener("error", failed);
        reject(error);
      }
    });
  }
}

/** A player for one `<video>` element. */
export class SatchelPlayer extends EventTarget {
  /**
   * @param {HTMLVideoElement} video
   * @param {{manifestURL: string, licenseURL: string, token: string|null}} options
   */
  constructor(video, { manifestURL, licenseURL, token }) {
    super();
    this.video = video;
    this.manifestURL = manifestURL;
    this.licenseURL = licenseURL;
    this.token = token;
    this.state = "idle";
    this.tracks = [];
    this.quality = "auto";
    this.throughput = null;  // bits per second, smoothed
    this.failed = false;
  }

  setState(state) {
    if (this.failed || this.state === state) return;
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: state }));
  }

  /** Stops everything and reports `error` (once). */
  fail(error) {
    if (this.failed) return;
    this.setState("error");
    this.failed = true;
    this.video.pause();
    this.dispatchEvent(new CustomEvent("error", { detail: error }));
  }

  /** Reads the manifest, sets up the keys and the media source, and starts feeding. */
  async load() {
    try {
      this.setState("loading");
      const response = await fetch(this.manifestURL, { cache: "no-cache" });
      if (!response.ok) throw new Error(`No package was found at ${new URL(this.manifestURL, location.href).pathname} (HTTP ${response.status}).`);
      this.manifest = parseMPD(await response.text(), response.url);
      const video = this.manifest.video[0] ?? null;
      const audio = this.manifest.audio[0] ?? null;
      if (this.manifest.scheme) {
        this.setState("licensing");
        this.keys = new ClearKeySession(this.video, {
          licenseURL: this.licenseURL,
          token: this.token,
          onLicense: (expires) => this.dispatchEvent(new CustomEvent("license", { detail: expires })),
          onError: (error) => this.fail(error),
        });
        const type = (representation) => `${representation.mimeType}; codecs="${representation.codecs}"`;
        await this.keys.attach({ videoTypes: this.manifest.video.map(type), audioTypes: this.manifest.audio.map(type), scheme: this.manifest.scheme });
        if (this.manifest.keyIDs.length > 0) this.keys.request(this.manifest.keyIDs).catch((error) => this.fail(error));
      }
      const source = new MediaSource();
      this.mediaSource = source;
      this.video.src = URL.createObjectURL(source);
      await new Promise((resolve) => source.addEventListener("sourceopen", resolve, { once: true }));
      source.duration = this.manifest.duration;
      for (const representation of [video, audio].filter(Boolean)) {
        const buffer = source.addSourceBuffer(`${representation.mimeType}; codecs="${representation.codecs}"`);
        this.tracks.push(new Track(representation.kind, representation, buffer));
      }
      if (video) this.dispatchEvent(new CustomEvent("rendition", { detail: video }));
      this.watch();
      this.pump();
    } catch (error) {
      this.fail(error);
    }
  }

  watch() {
    const video = this.video;
    video.addEventListener("seeking", () => this.seek(video.currentTime));
    video.addEventListener("timeupdate", () => this.pump());
    video.addEventListener("waiting", () => this.setState("buffering"));
    video.addEventListener("playing", () => this.setState("playing"));
    video.addEventListener("pause", () => { if (!video.ended) this.setState("paused"); });
    video.addEventListener("ended", () => this.setState("ended"));
    video.addEventListener("error", () => {
      const error = video.error;
      const names = { 1: "aborted", 2: "network error", 3: "the media could not be decoded", 4: "the media format is not supported" };
      this.fail(new Error(`The browser could not play the video: ${names[error?.code] ?? "unknown error"}${error?.message ? ` (${error.message})` : ""}.`));
    });
  }

  /** Moves every track's feeding to the segment that holds `time`. */
  seek(time) {
    for (const track of this.tracks) {
      track.generation += 1;
      track.next = track.indexAt(time);
    }
    this.pump();
  }

  /** The video renditions, highest bandwidth first. */
  get renditions() {
    return this.manifest?.video ?? [];
  }

  /**
   * Picks the video rendition: "auto" (by measured throughput) or a rendition's id, which takes effect at once.
   * @param {string} choice
   */
  setQuality(choice) {
    this.quality = choice;
    const track = this.tracks.find((candidate) => candidate.kind === "video");
    const representation = this.renditions.find((candidate) => candidate.id === choice);
    if (!track || !representation || representation === track.representation) return;
    const current = track.indexAt(this.video.currentTime);
    track.generation += 1;
    track.representation = representation;
    if (current + 1 < representation.segments.length) {
      track.next = current + 1;
      track.flushFrom = representation.segments[current + 1].start;
    }
    this.dispatchEvent(new CustomEvent("rendition", { detail: representation }));
    this.pump();
  }

  /** In "auto": the highest rendition that fits in 70 % of the measured throughput (the lowest when none does). */
  adapt(track) {
    if (this.quality !== "auto" || track.kind !== "video" || this.throughput === null) return;
    const fitting = this.renditions.find((candidate) => candidate.bandwidth <= this.throughput * 0.7) ?? this.renditions.at(-1);
    if (fitting && fitting !== track.representation) {
      track.representation = fitting;
      this.dispatchEvent(new CustomEvent("rendition", { detail: fitting }));
    }
  }

  /** Starts a feed on every idle track that needs media; ends the stream once every track has all of it. */
  pump() {
    if (this.failed || !this.mediaSource) return;
    const now = this.video.currentTime;
    for (const track of this.tracks) {
      if (track.busy || track.next >= track.representation.segments.length) continue;
      if (track.representation.segments[track.next].start > track.bufferedEnd(now) + 0.1 && track.flushFrom === null) {
        // A gap after a seek: feed from the segment that holds the playhead.
        track.next = track.indexAt(now);
      }
      if (track.bufferedEnd(now) - now >= AHEAD && track.flushFrom === null) continue;
      track.busy = true;
      this.feed(track).catch((error) => this.fail(error)).finally(() => {
        track.busy = false;
        this.pump();
      });
    }
    const complete = this.tracks.length > 0 && this.tracks.every((track) => !track.busy && track.next >= track.representation.segments.length);
    if (complete && this.mediaSource.readyState === "open" && this.tracks.every((track) => !track.buffer.updating)) {
      this.mediaSource.endOfStream();
    }
  }

  async fetchBytes(url) {
    const started = performance.now();
    const response = await fetch(url);
    if (!response.ok) throw new Error(`A part of the video is missing on the server: ${new URL(url).pathname} (HTTP ${response.status}).`);
    const bytes = await response.arrayBuffer();
    return { bytes, seconds: Math.max((performance.now() - started) / 1000, 0.001) };
  }

  /** Appends one segment (and the rendition's initialization segment first when it changed). */
  async feed(track) {
    const generation = track.generation;
    if (track.flushFrom !== null) {
      const from = track.flushFrom;
      track.flushFrom = null;
      if (track.buffer.buffered.length > 0 && track.buffer.buffered.end(track.buffer.buffered.length - 1) > from) {
        await track.operate(() => track.buffer.remove(from, Infinity));
      }
    }
    this.adapt(track);
    const representation = track.representation;
    const index = track.next;
    const segment = representation.segments[index];
    if (!segment) return;
    if (track.initOf !== representation.id && representation.initURL) {
      const init = await this.fetchBytes(representation.initURL);
      if (generation !== track.generation) return;
      const type = `${representation.mimeType}; codecs="${representation.codecs}"`;
      if (track.initOf !== null && track.buffer.changeType) track.buffer.changeType(type);
      await track.operate(() => track.buffer.appendBuffer(init.bytes));
      track.initOf = representation.id;
    }
    const media = await this.fetchBytes(segment.url);
    if (track.kind === "video") {
      const bits = media.bytes.byteLength * 8 / media.seconds;
      this.throughput = this.throughput === null ? bits : this.throughput * 0.7 + bits * 0.3;
    }
    if (generation !== track.generation || this.failed) return;  // a seek or a switch made it stale
    const behind = this.video.currentTime - BEHIND;
    if (behind > 0 && track.buffer.buffered.length > 0 && track.buffer.buffered.start(0) < behind) {
      await track.operate(() => track.buffer.remove(0, behind));
    }
    await track.operate(() => track.buffer.appendBuffer(media.bytes));
    if (generation === track.generation) track.next = index + 1;
  }

  /** Stops playback and releases the keys and the media source. */
  async destroy() {
    this.failed = true;
    this.video.pause();
    this.video.removeAttribute("src");
    this.video.load();
    await this.keys?.close();
  }
}
