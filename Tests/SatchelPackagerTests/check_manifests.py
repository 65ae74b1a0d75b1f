#!/usr/bin/env python3
"""Independent check of a Satchel package: Python's m3u8 and mpegdash parse every playlist
and MPD, and every segment a manifest names exists. Prints one line; exit 1 on any problem."""
import os
import sys

try:
    import m3u8
    from mpegdash.parser import MPEGDASHParser
except ImportError:
    print("FAIL Python's m3u8 and mpegdash packages are required (scripts/test installs them: pip install m3u8 mpegdash)")
    sys.exit(1)


def fail(message):
    print("FAIL " + message)
    sys.exit(1)


def check_hls(root):
    master = m3u8.load(os.path.join(root, "master.m3u8"))
    if not master.is_variant:
        fail("master.m3u8 is not a variant playlist")
    uris = [p.uri for p in master.playlists] + [m.uri for m in master.media if m.uri]
    count = 0
    for uri in uris:
        path = os.path.join(root, uri)
        media = m3u8.load(path)
        if not media.segments or not media.is_endlist:
            fail(uri + ": no segments or no ENDLIST")
        base = os.path.dirname(path)
        for segment in media.segments:
            if not os.path.exists(os.path.join(base, segment.uri)):
                fail(uri + ": missing " + segment.uri)
            if segment.duration > media.target_duration + 0.5:
                fail(uri + ": EXTINF above TARGETDURATION")
            count += 1
        if media.segment_map:
            for item in media.segment_map:
                if not os.path.exists(os.path.join(base, item.uri)):
                    fail(uri + ": missing map " + item.uri)
    return len(uris), count


def check_dash(root):
    mpd = MPEGDASHParser.parse(os.path.join(root, "manifest.mpd"))
    count = 0
    for period in mpd.periods:
        for adaptation in period.adaptation_sets:
            for rep in adaptation.representations:
                template = rep.segment_templates[0]
                init = template.initialization.replace("$RepresentationID$", rep.id)
                if not os.path.exists(os.path.join(root, init)):
                    fail("missing " + init)
                number = template.start_number or 1
                for s in template.segment_timelines[0].Ss:
                    for _ in range((s.r or 0) + 1):
                        media = template.media.replace("$Number$", str(number)).replace("$RepresentationID$", rep.id)
                        if not os.path.exists(os.path.join(root, media)):
                            fail("missing " + media)
                        number += 1
                        count += 1
    return count


root = sys.argv[1]
playlists, segments = check_hls(root)
dash = check_dash(root) if os.path.exists(os.path.join(root, "manifest.mpd")) else 0
print("OK %d playlists, %d HLS segments, %d DASH segments" % (playlists, segments, dash))
