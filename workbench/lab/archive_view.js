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
    const started = performance.now();
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
    const pixels = image.data;
    const colours = new Uint8Array(3 * fitness.length);  // each cell's colour once, then every pixel copies its cell's
    for (let cell = 0; cell < fitness.length; cell++) {
      const value = fitness[cell];
      colours.set(Number.isNaN(value) ? EMPTY : colour((value - low) / span), 3 * cell);
    }
    for (let p = 0; p < raster.length; p++) {
      const cell = raster[p], at = 4 * p;
      if (cell >= 0) {
        pixels[at] = colours[3 * cell]; pixels[at + 1] = colours[3 * cell + 1]; pixels[at + 2] = colours[3 * cell + 2];
      } else {
        pixels[at] = EMPTY[0]; pixels[at + 1] = EMPTY[1]; pixels[at + 2] = EMPTY[2];
      }
      pixels[at + 3] = 255;
    }
    context.putImageData(image, 0, 0);
    const labels = model.get("axis_labels");
    info.textContent = `${elites} of ${fitness.length} cells hold an elite` +
      (elites ? `; fitness ${low.toPrecision(4)} (dark) to ${high.toPrecision(4)} (yellow)` : "") +
      `; x: ${labels[0]}, y: ${labels[1]}` + (model.get("message") ? ` — ${model.get("message")}` : "");
    performance.measure("wb-archive-draw", { start: started });  // what a redraw costs (the browser test reads it)
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
  // One update changes several traits: they are drawn once, at the next frame (a hidden tab draws when shown).
  let drawing = false;
  function redraw() {
    if (drawing) return;
    drawing = true;
    requestAnimationFrame(() => { drawing = false; draw(); });
  }
  for (const name of ["raster", "fitness", "generation", "descriptor", "width", "height", "message"]) {
    model.on(`change:${name}`, redraw);
  }
  draw();
}

export default { render };
