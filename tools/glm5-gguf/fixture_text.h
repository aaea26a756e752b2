// Built-in training text for fixture tokenizers: original mixed prose, code, numbers and UTF-8.
//
// The mix is deliberate: repeated English words give common merges, indented code gives
// whitespace and punctuation runs, accented Latin, Chinese and emoji give multi-byte UTF-8 merges.
// Changing this text changes every fixture tokenizer built from it.
#pragma once

namespace glm5c::fixture {

constexpr const char kFixtureText[] = R"GLM5FIXTURE(The Lighthouse Keeper's Notebook

On the first morning of the season, the keeper climbed the one hundred and twelve steps of the
tower and wrote the date at the top of a clean page: 14 March, wind from the north-west, sea
moderate, visibility good. She had kept the same notebook for nine years, and every page began
the same way. The weather was never the same, but the way of writing it down was.

The lamp at the top of the tower turned once every 20 seconds. Ships that passed the point at
night counted the flashes and knew where they were. A ship that counted wrong would turn too
early, and the rocks under the water would find it. So the keeper cleaned the glass every
morning, checked the oil every evening, and wound the clockwork every four hours.

In the afternoons she read. She read about the history of the coast, about the people who had
built the tower in 1871, and about the engineers who had measured the height of the rocks at
low tide. They had written their numbers in long columns: 3.25 metres, 3.40 metres, 2.95
metres, 3.10 metres. The numbers were small, but the work of finding them had taken a whole
summer, and two of the men had nearly drowned.

"Why do you write it all down?" her nephew asked when he visited in the summer. "Nobody reads
it." She told him that the notebook was not written for readers. It was written so that the
next keeper would know what the sea had done, and what the tower had done in answer.

Later that year the harbour office sent her a small computer, so that the readings could be
sent to the mainland every hour. The nephew, who was learning to program, wrote the first
version of the logging code for her. It was short, and it was not perfect, but it worked.

    #include <stdio.h>
    #include <string.h>

    /* One reading of the weather station, taken every hour. */
    struct reading {
        int hour;
        double wind_speed;
        double wave_height;
        char direction[8];
    };

    static double average_wave(const struct reading *r, int n) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            sum += r[i].wave_height;
        }
        return n > 0 ? sum / n : 0.0;
    }

    int main(void) {
        struct reading day[24];
        memset(day, 0, sizeof(day));
        for (int i = 0; i < 24; i++) {
            day[i].hour = i;
            day[i].wind_speed = 12.5 + i * 0.25;
            day[i].wave_height = 1.75 + (i % 6) * 0.125;
            strcpy(day[i].direction, "NW");
        }
        printf("average wave height: %.3f m\n", average_wave(day, 24));
        return 0;
    }

A year later he rewrote it in Python, because the harbour office wanted charts, and charts
were easier to draw in Python than in C.

    import math


    def average(values):
        """Return the mean of a list of numbers, or 0.0 for an empty list."""
        if not values:
            return 0.0
        return sum(values) / len(values)


    def beaufort(speed_knots):
        # The Beaufort scale, from 0 (calm) to 12 (hurricane force).
        limits = [1, 4, 7, 11, 17, 22, 28, 34, 41, 48, 56, 64]
        for force, limit in enumerate(limits):
            if speed_knots < limit:
                return force
        return 12


    class Station:
        def __init__(self, name, latitude, longitude):
            self.name = name
            self.latitude = latitude
            self.longitude = longitude
            self.readings = []

        def record(self, hour, wind, wave):
            self.readings.append({"hour": hour, "wind": wind, "wave": wave})

        def summary(self):
            winds = [r["wind"] for r in self.readings]
            waves = [r["wave"] for r in self.readings]
            return {
                "name": self.name,
                "mean_wind": average(winds),
                "mean_wave": average(waves),
                "max_force": max((beaufort(w) for w in winds), default=0),
            }


    if __name__ == "__main__":
        station = Station("North Point", 57.4512, -6.2087)
        for hour in range(24):
            station.record(hour, 10.0 + math.sin(hour / 3.0) * 4.0, 1.5 + hour * 0.05)
        print(station.summary())

The keeper did not read the code, but she liked the charts. On calm days the lines were flat
and quiet; on stormy days they climbed like the steps of the tower. She pinned the charts to
the wall next to the old tide tables, and compared them with the notes in her notebook.

Visitors came in the summer, too. A group of students from Lyon stayed for a week to study the
birds. They spoke of the café in the village, of the crème brûlée at the hotel, and of the
naïve optimism of the ferry timetable. One of them, Zoë, drew the tower in pencil from every
side. Another, José, said the coast reminded him of a village near São Paulo, where his
grandmother lived. Their teacher called the whole trip a rendezvous with the sea, and said the
word with a proper French accent, which made the students laugh: « rendez-vous, mes amis ! »

The next spring a group of engineers from Shanghai came to study the old stone foundations.
They left a note in the visitors' book, written in careful characters:

灯塔已经有一百五十年的历史了。我们在这里学习了很多关于大海的知识。
每天晚上，灯光都会照亮远处的海面，船只因此能够安全回家。
谢谢你们的热情款待，希望明年还能再来。灯塔、大海和天空都很美。

Under the note one of them had drawn a small lighthouse and a wave 🌊, and someone else had
added a smiling face 😊 and a star ⭐. The keeper copied the note into her own notebook, with
the drawings, because it was the first note in the book that she could not read herself.

When the readings went wrong, the code printed warnings, and the warnings were always the same:

    WARNING: reading 17 missing (sensor 3 offline)
    WARNING: reading 18 missing (sensor 3 offline)
    WARNING: wave height 9.99 m is above the limit of 8.00 m
    ERROR: connection to the mainland lost at 03:45, retrying in 60 s
    INFO: connection restored at 03:47 after 2 retries

The keeper learned what each warning meant. Sensor 3 was the one on the west rock, and it went
offline whenever a seal decided to sleep on it. The wave height of 9.99 metres was not a real
wave; it was what the sensor reported when it was full of seaweed. And the connection was lost
every time the wind reached force 9, because the cable on the cliff swung against the rocks.

At the end of the season she wrote the last page of the year: 31 October, wind from the west,
sea rough, visibility poor. 4,380 hours of light, 788,400 flashes, 3 ships turned back from the
rocks, 0 ships lost. Then she closed the notebook, put it on the shelf with the other nine, and
went down the one hundred and twelve steps for the last time that year.

Questions & answers from the harbour office (2024-11-02):
- Q: How often is the lamp cleaned? A: Every morning, before 08:00.
- Q: How much oil does the lamp use? A: About 1.5 litres per night; 45 litres per month.
- Q: Is the tower open to visitors? A: Yes -- from May to September, 10:00-16:00, €5 per person.
- Q: Who keeps the notebook? A: The keeper does; the computer only keeps the numbers.
)GLM5FIXTURE";

} // namespace glm5c::fixture
