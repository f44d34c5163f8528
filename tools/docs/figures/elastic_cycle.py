"""The elastic cycle in place, over time, as docs/elastic.md describes it and kolo/elastic/runner.py runs
it: commits; a rank lost; the survivors' ops fail, they shrink the job to themselves (recover_in_place),
restore the last commit, sync from the new rank 0 and go on; a host added joins at the next commit by a
planned restart."""
import diagram
import svg

NAME = "elastic-cycle"
X0, X1 = 120, 760
COMMITS = [(190, "commit"), (320, "commit"), (540, "commit"), (625, "commit")]
LOST_AT, RECOVERED, RESTART_AT, RESUMED = 392, 470, 628, 672


def lane_y(i):
    return 120 + i * 30


def badge(canvas, x, y, number, color, r=10):
    """A numbered disc: where the note of that number happens."""
    canvas.circle(x, y, r, fill=color)
    canvas.ctext(x, y, number, size=r + 2, fill="#FFFFFF", bold=True)


def draw():
    canvas = svg.Svg(780, 612, "Elastic training in place: a rank lost, the survivors roll back; a host added")
    canvas.text(390, 26, "Elastic training in place: a lost rank, then a new host", size=16, anchor="middle",
                bold=True)
    canvas.text(390, 46, "each line is a worker process, time to the right; the numbers on a line are its rank",
                size=12, anchor="middle", fill=svg.GREY)
    canvas.text(20, 80, "processes", size=12, bold=True)
    canvas.arrow(X0, 254, X1, 254, stroke=svg.GREY, width=1.2)
    canvas.text(X1, 270, "time", size=11, anchor="end", fill=svg.GREY)

    for x, name in COMMITS:
        canvas.line(x, 98, x, 246, stroke=svg.GREEN, width=1.6, dash=(5, 3))
        canvas.text(x, 270, name, size=11, anchor="middle", fill=svg.GREEN)

    # The work between the last commit and the loss: done, lost, and done again after the roll-back.
    canvas.rect(COMMITS[1][0], 104, LOST_AT - COMMITS[1][0], 122, fill=svg.YELLOW, opacity=0.35)
    canvas.text((COMMITS[1][0] + LOST_AT) / 2, 240, "lost; done again after 4", size=11, anchor="middle", italic=True)

    # (first rank, last rank) of each process in each stretch: before the loss, after it, after the restart.
    ranks = [(0, 0, 0), (1, 1, 1), (2, None, None), (3, 2, 2), (None, None, 3)]
    for i, (before, after, grown) in enumerate(ranks):
        y = lane_y(i)
        canvas.text(20, y + 4.5, "process %d" % (i + 1) if i < 4 else "new host", size=12)
        if before is not None:
            end = LOST_AT if after is None else RECOVERED
            canvas.line(X0, y, end, y, stroke=svg.BLUE, width=5)
            canvas.text(X0 + 6, y - 6, str(before), size=10, fill=svg.BLUE)
        if after is not None:
            canvas.line(RECOVERED, y, RESTART_AT, y, stroke=svg.BLUE, width=5)
            canvas.text(RECOVERED + 6, y - 6, str(after), size=10, fill=svg.BLUE)
        if grown is not None:
            canvas.line(RESUMED, y, X1 - 10, y, stroke=svg.BLUE, width=5)
            canvas.text(RESUMED + 6, y - 6, str(grown), size=10, fill=svg.BLUE)
    y = lane_y(2)
    canvas.line(LOST_AT - 7, y - 7, LOST_AT + 7, y + 7, stroke=svg.VERMILION, width=3)
    canvas.line(LOST_AT - 7, y + 7, LOST_AT + 7, y - 7, stroke=svg.VERMILION, width=3)
    # The recovery: every survivor, from the loss to training again.
    canvas.rect(LOST_AT + 12, lane_y(0) - 9, RECOVERED - LOST_AT - 16, lane_y(3) - lane_y(0) + 18, fill=svg.PALE,
                stroke=svg.VERMILION, width=1.2, rx=4)
    badge(canvas, LOST_AT - 16, lane_y(2) - 15, "2", svg.VERMILION, 9)
    badge(canvas, (LOST_AT + RECOVERED) / 2 + 2, lane_y(1) + 15, "3", svg.VERMILION)
    canvas.path([("M", RECOVERED - 10, lane_y(0) - 12), ("C", RECOVERED - 40, 70, COMMITS[1][0] + 30, 70,
                                                          COMMITS[1][0] + 4, 96)],
                stroke=svg.VERMILION, width=1.8)
    canvas.polygon([(COMMITS[1][0] + 2, 102), (COMMITS[1][0] - 1, 92), (COMMITS[1][0] + 9, 94)], fill=svg.VERMILION)
    diagram.label(canvas, (COMMITS[1][0] + RECOVERED) / 2 + 8, 74, "roll back to the last commit", size=11,
                  fill=svg.VERMILION)
    badge(canvas, (COMMITS[1][0] + RECOVERED) / 2 - 84, 74, "4", svg.VERMILION, 9)
    # The planned restart onto the new host.
    canvas.rect(RESTART_AT + 2, lane_y(0) - 9, RESUMED - RESTART_AT - 4, lane_y(4) - lane_y(0) + 18, fill=svg.PALE,
                stroke=svg.PURPLE, width=1.2, rx=4)
    badge(canvas, (RESTART_AT + RESUMED) / 2, lane_y(2), "5", svg.PURPLE)
    badge(canvas, COMMITS[0][0] - 36, 266, "1", svg.GREEN, 9)

    notes = [
        ("1", svg.GREEN, "commit", "state.commit() keeps the state (parameters, optimizer, sampler, counters); "
         "every rank holds the same."),
        ("2", svg.VERMILION, "a rank is lost", "killed, frozen or cut off: kolo revokes its communicators, and "
         "every survivor's ops fail with PeersFailedError."),
        ("3", svg.VERMILION, "the survivors agree", "who is left, and shrink the job to them: recover_in_place() "
         "(MPIX_Comm_shrink with ULFM; the store in the Gloo world). Ranks and size are the new job's."),
        ("4", svg.VERMILION, "roll back and go on", "restore() the last commit, sync() from the new rank 0, run "
         "the reset callbacks, train on from the commit."),
        ("5", svg.PURPLE, "a host is added", "the discovery script finds more slots; at the next commit the ranks "
         "agree and exit 75, and kolorun starts the job again with the new host, from that commit."),
    ]
    y = 300
    for number, color, head, text in notes:
        badge(canvas, 32, y - 4, number, color, 11)
        canvas.text(52, y, head, size=13, bold=True)
        lines = wrap(text, 98)
        for j, line in enumerate(lines):
            canvas.text(52, y + 19 + 17 * j, line, size=12)
        y += 30 + 17 * len(lines)
    return canvas.render()


def wrap(text, width):
    """Words into lines of at most `width` characters."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = (line + " " + word).strip()
    return lines + [line]
