"""How a kolo job starts, as docs/running-jobs.md and docs/architecture.md's "Worlds: MPI and Gloo" describe
it: an MPI launcher's ranks form the MPI world, any other launcher's the Gloo world (init() picks, in
src/api/world_choice.*), and both worlds run the same engine under the same APIs."""
import diagram
import svg

NAME = "worlds"
ENGINE = "#EAF4FB"


def draw():
    canvas = svg.Svg(820, 540, "How a kolo job starts: MPI or Gloo world, then the same engine")
    canvas.text(410, 26, "Two ways to start a job, one engine", size=16, anchor="middle", bold=True)
    canvas.text(410, 46, "the program is the same in both; nothing in it names the world", size=12, anchor="middle",
                fill=svg.GREY)
    lx, lw, mx, mw, rx, rw = 20, 234, 298, 250, 590, 210
    columns = ((lx, lw, "the launcher"), (mx, mw, "init() picks the world"), (rx, rw, "the APIs and the engine"))
    for x, w, title in columns:
        canvas.rect(x - 8, 62, w + 16, 414, fill="none", stroke=svg.LIGHT, width=1.2, rx=8, dash=(4, 3))
        canvas.text(x + w / 2, 82, title, size=13, anchor="middle", bold=True, fill=svg.GREY)
    canvas.text(mx + mw / 2, 100, "from KOLO_CONTROLLER, the launcher's", size=11, anchor="middle", fill=svg.GREY)
    canvas.text(mx + mw / 2, 114, "variables and the build", size=11, anchor="middle", fill=svg.GREY)

    mpi_run = diagram.box(canvas, lx, 130, lw, 110, ["MPI launchers", "kolorun", "mpirun",
                                                     "Slurm: srun --mpi=pmix,", "or sbatch"], mono=(1, 2))
    gloo_run = diagram.box(canvas, lx, 284, lw, 176, ["without MPI", "kolorun --gloo", "torchrun",
                                                      "Ray: kolo.ray.RayExecutor", "and Ray Train",
                                                      "Kubernetes pods, any env:// launch:",
                                                      "MASTER_ADDR, MASTER_PORT,", "RANK, WORLD_SIZE"],
                           mono=(1, 2))
    mpi = diagram.box(canvas, mx, 130, mw, 110, ["MPI world", "MPI_COMM_WORLD and its splits",
                                                 "survival in place with ULFM", "(where the MPI has it)",
                                                 "peer watch: heartbeats over MPI,", "with a UDP doorbell"],
                      fill=ENGINE)
    gloo = diagram.box(canvas, mx, 284, mw, 176, ["Gloo world", "rendezvous in a TCPStore:",
                                                  "kolorun --gloo's, torchrun's agent's,",
                                                  "or rank 0's on MASTER_PORT",
                                                  "a Gloo TCP mesh between",
                                                  "every pair of ranks",
                                                  "peer watch through the store",
                                                  "in place without ULFM"], fill=ENGINE)
    apis = diagram.box(canvas, rx, 130, rw, 110, ["the APIs", "kolo.torch, kolo.tensorflow,", "kolo.keras, kolo.jax",
                                                  "torch.distributed's backend:", "init_process_group(\"kolo\")"],
                       mono=(4,))
    engine = diagram.box(canvas, rx, 284, rw, 176, ["the same engine", "negotiation", "fusion", "every op",
                                                    "process sets", "hierarchical allreduce",
                                                    "shared memory inside a host"], fill=ENGINE)

    canvas.arrow(mpi_run.right, mpi_run.cy, mpi.left, mpi.cy, stroke=svg.BLUE, width=2)
    canvas.arrow(gloo_run.right, gloo_run.cy, gloo.left, gloo.cy, stroke=svg.BLUE, width=2)
    canvas.arrow(mpi.right, mpi.cy, engine.left, engine.top + 36, stroke=svg.BLUE, width=2)
    canvas.arrow(gloo.right, gloo.cy, engine.left, gloo.cy, stroke=svg.BLUE, width=2)
    canvas.arrow(apis.cx, apis.bottom, engine.cx, engine.top)

    canvas.text(410, 502, "The engine sees only a world's contexts and groups: every op, dtype and process set is "
                "written once", size=11, anchor="middle", fill=svg.GREY)
    canvas.text(410, 520, "and runs alike in both, with the same results. KOLO_CONTROLLER=mpi|gloo forces one world.",
                size=11, anchor="middle", fill=svg.GREY)
    return canvas.render()
