// Satchel player: reading a DASH MPD (ISO/IEC 23009-1) into what the player needs — the renditions of each
// kind, their codecs, their initialization segment and the URL and time span of every media segment.
//
// It reads what Satchel's packager writes and what most on-demand packagers do: a static MPD, the first
// Period, AdaptationSets of video and audio, a SegmentTemplate (on the AdaptationSet or the Representation)
// with a SegmentTimeline ($Number$ or $Time$) or with @duration ($Number$), and BaseURL at any level.
// Anything else is refused with an MPDError naming what is missing, never guessed.

/** Why a manifest cannot be played. */
export class MPDError extends Error {
  constructor(message) {
    super(message);
    this.name = "MPDError";
  }
}

/** The most segments one Representation may list: a manifest asking for more is refused, not looped over. */
export const MAX_SEGMENTS = 100000;

/**
 * Seconds of an ISO 8601 duration as MPDs write it ("PT1H2M3.5S", "P1DT2H").
 * @param {string|null} text
 * @returns {number|null} null when absent or malformed
 */
export function parseDuration(text) {
  if (!text) return null;
  const match = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text.trim());
  if (!match || text.trim() === "P" || text.trim() === "PT") return null;
  const [, days, hours, minutes, seconds] = match.map((part) => (part === undefined ? 0 : Number(part)));
  return days * 86400 + hours * 3600 + minutes * 60 + seconds;
}

/**
 * A SegmentTemplate URL for one segment: $RepresentationID$, $Bandwidth$, $Number$, $Time$ (with an optional
 * printf width such as $Number%05d$) and $$.
 */
export function expandTemplate(template, values) {
  return template.replace(/\$(RepresentationID|Bandwidth|Number|Time)?(?:%0(\d+)d)?\$/g, (whole, name, width) => {
    if (name === undefined) return "$";
    const value = String(values[name] ?? "");
    return width ? value.padStart(Number(width), "0") : value;
  });
}

/** The children of `element` named `name` in any namespace (MPDs use the DASH namespace; tests may not). */
function children(element, name) {
  return Array.from(element.children).filter((child) => child.localName === name);
}

/** The number an attribute holds (`fallback` when absent); anything but a finite non-negative number is refused. */
function numeric(text, name, fallback) {
  if (text === null || text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new MPDError(`@${name}="${text}" is not a non-negative number`);
  return value;
}

function number(element, name, fallback) {
  return numeric(element.getAttribute(name), name, fallback);
}

/** A URL against the BaseURL elements of `element` (the first one) and the base before it. */
function rebase(element, base) {
  const baseURL = children(element, "BaseURL")[0];
  return baseURL ? new URL(baseURL.textContent.trim(), base).href : base;
}

/** The key ID of a `cenc:default_KID` ("4e6daa32-6d92-…") as 32 hex digits, or null. */
function defaultKID(adaptationSet) {
  for (const protection of children(adaptationSet, "ContentProtection")) {
    for (const attribute of Array.from(protection.attributes)) {
      if (attribute.localName === "default_KID") {
        const hex = attribute.value.replace(/-/g, "").toLowerCase();
        if (!/^[0-9a-f]{32}$/.test(hex)) throw new MPDError(`default_KID "${attribute.value}" is not a key ID`);
        return hex;
      }
    }
  }
  return null;
}

/** The protection scheme ("cenc", "cbcs") of an AdaptationSet, or null when it is clear. */
function protectionScheme(adaptationSet) {
  const mp4 = children(adaptationSet, "ContentProtection")
    .find((protection) => protection.getAttribute("schemeIdUri")?.toLowerCase() === "urn:mpeg:dash:mp4protection:2011");
  return mp4 ? mp4.getAttribute("value") || "cenc" : null;
}

/** The SegmentTemplate that applies: the Representation's, filled in from the AdaptationSet's. */
function template(adaptationSet, representation) {
  const outer = children(adaptationSet, "SegmentTemplate")[0] ?? null;
  const inner = children(representation, "SegmentTemplate")[0] ?? null;
  if (!outer && !inner) throw new MPDError(`representation "${representation.getAttribute("id")}" has no SegmentTemplate`);
  const get = (name) => inner?.getAttribute(name) ?? outer?.getAttribute(name) ?? null;
  const timeline = (inner && children(inner, "SegmentTimeline")[0]) ?? (outer && children(outer, "SegmentTimeline")[0]) ?? null;
  return {
    media: get("media"),
    initialization: get("initialization"),
    timescale: numeric(get("timescale"), "timescale", 1),
    startNumber: numeric(get("startNumber"), "startNumber", 1),
    duration: numeric(get("duration"), "duration", null),
    presentationTimeOffset: numeric(get("presentationTimeOffset"), "presentationTimeOffset", 0),
    timeline,
  };
}

/** Every segment of a template: {number, time (in timescale units), duration, start and end (seconds)}. */
function segmentTimes(spec, periodSeconds) {
  if (spec.timescale <= 0) throw new MPDError("@timescale must be positive");
  const segments = [];
  const add = (number, time, duration) => {
    if (segments.length >= MAX_SEGMENTS) throw new MPDError(`a representation lists more than ${MAX_SEGMENTS} segments`);
    const start = (time - spec.presentationTimeOffset) / spec.timescale;
    segments.push({ number, time, start, end: start + duration / spec.timescale });
  };
  if (spec.timeline) {
    let time = 0;
    let segmentNumber = spec.startNumber;
    for (const s of children(spec.timeline, "S")) {
      time = number(s, "t", time);
      const duration = number(s, "d", null);
      if (!duration) throw new MPDError("a SegmentTimeline S element has no positive @d");
      const repeat = Number(s.getAttribute("r") ?? 0);
      if (!Number.isInteger(repeat) || repeat < 0) throw new MPDError(`S@r="${s.getAttribute("r")}" is not supported (only counts ≥ 0)`);
      if (repeat >= MAX_SEGMENTS) throw new MPDError(`a representation lists more than ${MAX_SEGMENTS} segments`);
      for (let index = 0; index <= repeat; index += 1) {
        add(segmentNumber, time, duration);
        time += duration;
        segmentNumber += 1;
      }
    }
    return segments;
  }
  if (spec.duration) {
    if (!Number.isFinite(periodSeconds) || periodSeconds <= 0) throw new MPDError("a SegmentTemplate@duration needs the presentation's duration");
    const count = Math.ceil((periodSeconds * spec.timescale) / spec.duration - 1e-9);
    if (count > MAX_SEGMENTS) throw new MPDError(`a representation lists more than ${MAX_SEGMENTS} segments`);
    for (let index = 0; index < count; index += 1) {
      const time = index * spec.duration;
      const last = index === count - 1;
      const duration = last ? periodSeconds * spec.timescale - time : spec.duration;
      add(spec.startNumber + index, time + spec.presentationTimeOffset, duration);
    }
    return segments;
  }
  throw new MPDError("a SegmentTemplate needs a SegmentTimeline or @duration");
}

/**
 * Reads an MPD.
 * @param {string} text the MPD's XML
 * @param {string} manifestURL where it was fetched from (relative URLs resolve against it)
 * @returns {{duration: number, video: object[], audio: object[], keyIDs: string[], scheme: string|null}}
 *   each rendition: {id, kind, mimeType, codecs, bandwidth, width, height, keyID, initURL, segments: [{url, start, end}]}
 */
export function parseMPD(text, manifestURL) {
  const document = new DOMParser().parseFromString(text, "application/xml");
  const root = document.documentElement;
  if (!root || root.localName !== "MPD" || document.getElementsByTagName("parsererror").length > 0) {
    throw new MPDError("the manifest is not an MPD (XML with an MPD root element)");
  }
  if ((root.getAttribute("type") ?? "static") !== "static") throw new MPDError("live (dynamic) MPDs are not supported by this player");
  const period = children(root, "Period")[0];
  if (!period) throw new MPDError("the MPD has no Period");
  const duration = parseDuration(period.getAttribute("duration")) ?? parseDuration(root.getAttribute("mediaPresentationDuration"));
  const periodBase = rebase(period, rebase(root, manifestURL));
  const result = { duration: duration ?? 0, video: [], audio: [], keyIDs: [], scheme: null };
  for (const adaptationSet of children(period, "AdaptationSet")) {
    const setMime = adaptationSet.getAttribute("mimeType") ?? "";
    const kind = adaptationSet.getAttribute("contentType") ?? setMime.split("/")[0];
    if (kind !== "video" && kind !== "audio") continue;  // text and images are not played here
    const keyID = defaultKID(adaptationSet);
    const scheme = protectionScheme(adaptationSet);
    if (keyID && !result.keyIDs.includes(keyID)) result.keyIDs.push(keyID);
    if (scheme) result.scheme = scheme;
    const setBase = rebase(adaptationSet, periodBase);
    for (const representation of children(adaptationSet, "Representation")) {
      const id = representation.getAttribute("id");
      if (!id) throw new MPDError("a Representation has no @id");
      const mimeType = representation.getAttribute("mimeType") ?? setMime;
      const codecs = representation.getAttribute("codecs") ?? adaptationSet.getAttribute("codecs");
      if (!mimeType || !codecs) throw new MPDError(`representation "${id}" has no mimeType or codecs`);
      const bandwidth = number(representation, "bandwidth", 0);
      const base = rebase(representation, setBase);
      const spec = template(adaptationSet, representation);
      if (!spec.media) throw new MPDError(`representation "${id}" has no SegmentTemplate@media`);
      const values = { RepresentationID: id, Bandwidth: bandwidth };
      const segments = segmentTimes(spec, duration).map((segment) => ({
        url: new URL(expandTemplate(spec.media, { ...values, Number: segment.number, Time: segment.time }), base).href,
        start: segment.start,
        end: segment.end,
      }));
      result[kind].push({
        id, kind, mimeType, codecs, bandwidth, keyID,
        width: number(representation, "width", 0), height: number(representation, "height", 0),
        initURL: spec.initialization ? new URL(expandTemplate(spec.initialization, values), base).href : null,
        segments,
      });
    }
  }
  if (result.video.length === 0 && result.audio.length === 0) throw new MPDError("the MPD has no video or audio representation");
  result.video.sort((a, b) => b.bandwidth - a.bandwidth);
  result.audio.sort((a, b) => b.bandwidth - a.bandwidth);
  if (!result.duration) result.duration = Math.max(0, ...[...result.video, ...result.audio].map((r) => r.segments.at(-1)?.end ?? 0));
  return result;
}
