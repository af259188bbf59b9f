// The browser side of workbench.lab.archive_view.ArchiveCanvas: paints the raster's cells by fitness on a canvas,
// shows a cell's fitness, descriptor and generation under the pointer, and reports clicks as `selected`.
const VIRIDIS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
const EMPTY = [225, 225, 225];

function colour(t) {
  const x = Math.min(Math.max(t, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - i;
  return VIRIDIS[i].map((v, k) => Math.round(v + f * (VIRIDIS[i + 1][k] - v)));
}

function view(dataView, Kind) {
  if (!dataView || !dataView.byteLength) return new Kind(0);
  return new Kind(dataView.buffer.slice(dataView.byteOffset, dataView.byteOffset + dataView.byteLength));
}

function render({ model, el }) {
  const canvas = document.createElement("canvas");
  canvas.className = "wb-archive-canvas";
  const tip = document.createElement("div");
  tip.className = "wb-archive-tip";
  const info = document.createElement("div");
  info.className = "wb-archive-info";
  el.append(canvas, tip, info);
  let raster, fitness, generation, descriptor;

  function draw() {
    const width = model.get("width"), height = model.get("height");
    raster = view(model.get("raster"), Int32Array);
    fitness = view(model.get("fitness"), Float32Array);
    generation = view(model.get("generation"), Int32Array);
    descriptor = view(model.get("descriptor"), Float32Array);
    canvas.width = width;
    canvas.height = height;
    let low = Infinity, high = -Infinity, elites = 0;
    for (const value of fitness) {
      if (!Number.isNaN(value)) { low = Math.min(low, value); high = Math.max(high, value); elites++; }
    }
    const span = high > low ? high - low : 1;
    const context = canvas.getContext("2d");
    const image = context.createImageData(width, height);
    for (let p = 0; p < raster.length; p++) {
      const cell = raster[p];
      const value = cell >= 0 ? fitness[cell] : NaN;
      const rgb = Number.isNaN(value) ? EMPTY : colour((value - low) / span);
      image.data.set([rgb[0], rgb[1], rgb[2], 255], 4 * p);
    }
    context.putImageData(image, 0, 0);
    const labels = model.get("axis_labels");
    info.textContent = `${elites} of ${fitness.length} cells hold an elite` +
      (elites ? `; fitness ${low.toPrecision(4)} (dark) to ${high.toPrecision(4)} (yellow)` : "") +
      `; x: ${labels[0]}, y: ${labels[1]}` + (model.get("message") ? ` — ${model.get("message")}` : "");
  }

  function cellAt(event) {
    const box = canvas.getBoundingClientRect();
    const x = Math.floor((event.clientX - box.left) / box.width * canvas.width);
    const y = Math.floor((event.clientY - box.top) / box.height * canvas.height);
    if (x < 0 || y < 0 || x >= canvas.width || y >= canvas.height) return -1;
    return raster[y * canvas.width + x];
  }

  canvas.addEventListener("mousemove", (event) => {
    const cell = cellAt(event);
    if (cell < 0 || Number.isNaN(fitness[cell])) {
      tip.textContent = cell < 0 ? "" : `cell ${cell}: empty`;
    } else {
      const d = model.get("dimensions");
      const values = Array.from(descriptor.slice(cell * d, (cell + 1) * d), (v) => v.toPrecision(3));
      tip.textContent = `cell ${cell}: fitness ${fitness[cell].toPrecision(5)}, descriptor (${values.join(", ")}), ` +
        `generation ${generation[cell]}`;
    }
    tip.dataset.cell = String(cell);
  });
  canvas.addEventListener("mouseleave", () => { tip.textContent = ""; });
  canvas.addEventListener("click", (event) => {
    const cell = cellAt(event);
    if (cell < 0) return;
    model.set("selected", cell);
    model.save_changes();
  });
  for (const name of ["raster", "fitness", "generation", "descriptor", "width", "height", "message"]) {
    model.on(`change:${name}`, draw);
  }
  draw();
}

export default { render };
